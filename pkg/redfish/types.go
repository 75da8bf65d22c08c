package redfish

// The resources of the DMTF Redfish schema this client reads, with only the
// fields it uses: a BMC's payloads carry many more (and OEM extensions),
// which decoding ignores.

// Link is a reference to another resource, by its URI.
type Link struct {
	ODataID string `json:"@odata.id"`
}

// ServiceRoot is /redfish/v1, the one URI a client may know: every other
// resource is found through its links.
type ServiceRoot struct {
	RedfishVersion string `json:"RedfishVersion"`
	UUID           string `json:"UUID"`
	Systems        Link   `json:"Systems"`
	SessionService Link   `json:"SessionService"`
	Links          struct {
		// Sessions is where a session is created (required by the
		// specification from 1.6 on; older services are found through
		// SessionService).
		Sessions Link `json:"Sessions"`
	} `json:"Links"`
}

// SessionService is the service that holds the sessions.
type SessionService struct {
	Sessions Link `json:"Sessions"`
}

// Collection is a resource collection (Systems, Sessions).
type Collection struct {
	Members []Link `json:"Members"`
}

// PowerState is a ComputerSystem's power state.
type PowerState string

// The power states of the schema (Resource.PowerState).
const (
	PowerOn          PowerState = "On"
	PowerOff         PowerState = "Off"
	PowerPoweringOn  PowerState = "PoweringOn"
	PowerPoweringOff PowerState = "PoweringOff"
	PowerPaused      PowerState = "Paused"
)

// ResetType is a ComputerSystem.Reset action's kind.
type ResetType string

// The reset types this client asks for.
const (
	// ResetForceOff turns the power off at once, without asking the
	// operating system: what fencing needs, as a machine that is
	// hung would not shut itself down.
	ResetForceOff ResetType = "ForceOff"
	ResetOn       ResetType = "On"
)

// ComputerSystem is a machine as its BMC describes it.
type ComputerSystem struct {
	ODataID    string     `json:"@odata.id"`
	ID         string     `json:"Id"`
	UUID       string     `json:"UUID"`
	PowerState PowerState `json:"PowerState"`
	Actions    struct {
		Reset ResetAction `json:"#ComputerSystem.Reset"`
	} `json:"Actions"`
}

// ResetAction is the ComputerSystem.Reset action: where to POST it and
// which reset types the BMC takes (empty when it does not say).
type ResetAction struct {
	Target          string      `json:"target"`
	AllowableValues []ResetType `json:"ResetType@Redfish.AllowableValues"`
}
