package metallb

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The input types hold the fields of MetalLB's resources (metallb.io
// v1beta1, and v1beta2 for BGPPeer) that the converter reads, as MetalLB
// documents them. They are decoded strictly: a field not listed here is
// reported, never dropped unseen.

// Group is the API group of MetalLB's resources.
const Group = "metallb.io"

// Kinds of MetalLB's resources the converter reads.
const (
	KindIPAddressPool    = "IPAddressPool"
	KindBGPPeer          = "BGPPeer"
	KindBGPAdvertisement = "BGPAdvertisement"
	KindL2Advertisement  = "L2Advertisement"
	KindCommunity        = "Community"
	KindBFDProfile       = "BFDProfile"
)

// object is what every resource has besides its spec.
type object struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Status          json.RawMessage   `json:"status,omitempty"`
}

type ipAddressPool struct {
	object
	Spec struct {
		Addresses         []string           `json:"addresses"`
		AutoAssign        *bool              `json:"autoAssign,omitempty"`
		AvoidBuggyIPs     bool               `json:"avoidBuggyIPs,omitempty"`
		ServiceAllocation *serviceAllocation `json:"serviceAllocation,omitempty"`
	} `json:"spec"`
}

type serviceAllocation struct {
	Priority           int                    `json:"priority,omitempty"`
	Namespaces         []string               `json:"namespaces,omitempty"`
	NamespaceSelectors []metav1.LabelSelector `json:"namespaceSelectors,omitempty"`
	ServiceSelectors   []metav1.LabelSelector `json:"serviceSelectors,omitempty"`
}

// bgpPeer is v1beta2's BGPPeer; v1beta1's fields are a subset of it (its
// nodeSelectors have the shape of a label selector).
type bgpPeer struct {
	object
	Spec struct {
		MyASN                  uint32                 `json:"myASN"`
		PeerASN                uint32                 `json:"peerASN,omitempty"`
		DynamicASN             string                 `json:"dynamicASN,omitempty"`
		PeerAddress            string                 `json:"peerAddress,omitempty"`
		Interface              string                 `json:"interface,omitempty"`
		SourceAddress          string                 `json:"sourceAddress,omitempty"`
		PeerPort               uint16                 `json:"peerPort,omitempty"`
		HoldTime               *metav1.Duration       `json:"holdTime,omitempty"`
		KeepaliveTime          *metav1.Duration       `json:"keepaliveTime,omitempty"`
		ConnectTime            *metav1.Duration       `json:"connectTime,omitempty"`
		RouterID               string                 `json:"routerID,omitempty"`
		NodeSelectors          []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
		Password               string                 `json:"password,omitempty"`
		PasswordSecret         *secretReference       `json:"passwordSecret,omitempty"`
		BFDProfile             string                 `json:"bfdProfile,omitempty"`
		EnableGracefulRestart  bool                   `json:"enableGracefulRestart,omitempty"`
		EBGPMultiHop           bool                   `json:"ebgpMultiHop,omitempty"`
		VRFName                string                 `json:"vrf,omitempty"`
		DisableMP              bool                   `json:"disableMP,omitempty"`
		DualStackAddressFamily bool                   `json:"dualStackAddressFamily,omitempty"`
	} `json:"spec"`
}

type secretReference struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

type bgpAdvertisement struct {
	object
	Spec struct {
		AggregationLength      *int32                 `json:"aggregationLength,omitempty"`
		AggregationLengthV6    *int32                 `json:"aggregationLengthV6,omitempty"`
		LocalPref              uint32                 `json:"localPref,omitempty"`
		Communities            []string               `json:"communities,omitempty"`
		IPAddressPools         []string               `json:"ipAddressPools,omitempty"`
		IPAddressPoolSelectors []metav1.LabelSelector `json:"ipAddressPoolSelectors,omitempty"`
		NodeSelectors          []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
		Peers                  []string               `json:"peers,omitempty"`
	} `json:"spec"`
}

type l2Advertisement struct {
	object
	Spec struct {
		IPAddressPools         []string               `json:"ipAddressPools,omitempty"`
		IPAddressPoolSelectors []metav1.LabelSelector `json:"ipAddressPoolSelectors,omitempty"`
		NodeSelectors          []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
		Interfaces             []string               `json:"interfaces,omitempty"`
	} `json:"spec"`
}

type communityAlias struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type communityResource struct {
	object
	Spec struct {
		Communities []communityAlias `json:"communities,omitempty"`
	} `json:"spec"`
}

type bfdProfile struct {
	object
	Spec struct {
		ReceiveInterval  *uint32 `json:"receiveInterval,omitempty"`
		TransmitInterval *uint32 `json:"transmitInterval,omitempty"`
		DetectMultiplier *uint32 `json:"detectMultiplier,omitempty"`
		EchoInterval     *uint32 `json:"echoInterval,omitempty"`
		EchoMode         *bool   `json:"echoMode,omitempty"`
		PassiveMode      *bool   `json:"passiveMode,omitempty"`
		MinimumTTL       *uint32 `json:"minimumTtl,omitempty"`
	} `json:"spec"`
}
