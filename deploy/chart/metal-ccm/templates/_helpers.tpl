{{/*
The name of the ServiceAccount, the workload and the roles. It is fixed: one
cloud-controller-manager runs per cluster, and deploy/'s tests and the docs
use these names.
*/}}
{{- define "metal-ccm.name" -}}
metal-cloud-controller-manager
{{- end -}}

{{/* Labels of every object. */}}
{{- define "metal-ccm.labels" -}}
{{ include "metal-ccm.selectorLabels" . }}
app.kubernetes.io/part-of: metal-ccm
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/*
Labels that select the pods. They are the selector of the workload, which
cannot change after it is created, so they stay this one label.
*/}}
{{- define "metal-ccm.selectorLabels" -}}
app.kubernetes.io/name: {{ include "metal-ccm.name" . }}
{{- end -}}

{{/* Where the ConfigMap and the BGP password Secret are mounted. */}}
{{- define "metal-ccm.configDir" -}}/etc/metal-ccm/config{{- end -}}
{{- define "metal-ccm.bgpDir" -}}/etc/metal-ccm/bgp{{- end -}}
{{- define "metal-ccm.l2Dir" -}}/etc/metal-ccm/l2{{- end -}}
{{- define "metal-ccm.bmcDir" -}}/etc/metal-ccm/bmc{{- end -}}

{{/*
Non-empty when a pool of the cloud-config is announced with L2: the node
agents then answer ARP and Neighbor Solicitations, which takes CAP_NET_RAW
(docs/l2.md, "Permissions").
*/}}
{{- define "metal-ccm.l2" -}}
{{- range (dig "loadBalancer" "pools" list (fromYaml .Values.cloudConfig)) -}}
{{- if has "L2" (default list .announce) -}}true{{- end -}}
{{- end -}}
{{- end -}}

{{/* Whether the agents' containers may have CAP_NET_RAW: unless agent.l2 is false (an agent without an L2 pool drops it at start). */}}
{{- define "metal-ccm.agentNetRaw" -}}
{{- if ne (toString .Values.agent.l2) "false" -}}true{{- end -}}
{{- end -}}

{{/* The L2 witness Lease as NAMESPACE/NAME, empty when there is none. */}}
{{- define "metal-ccm.l2Witness" -}}
{{- if and .Values.agent.enabled .Values.agent.l2Witness.enabled (or (include "metal-ccm.l2" .) (eq (toString .Values.agent.l2) "true")) -}}
{{ .Release.Namespace }}/{{ .Values.agent.l2Witness.leaseName }}
{{- end -}}
{{- end -}}

{{/* The membership key Secret of L2 (l2.secretFile: <l2Dir>/<key>). */}}
{{- define "metal-ccm.l2KeyVolume" -}}
- name: l2-key
  secret:
    secretName: {{ .Values.l2Key.secretName }}
    optional: true
    defaultMode: 0440
{{- end -}}

{{/*
The cloud-config document as given. It fails when the document is not YAML,
when a BGP peer's passwordFile or l2.secretFile is not in its mounted Secret's
folder, where the manager could not read it, or when an L2 pool has no key
and l2.insecureMembership is not set.
*/}}
{{- define "metal-ccm.cloudConfig" -}}
{{- $cfg := fromYaml .Values.cloudConfig -}}
{{- if hasKey $cfg "Error" -}}
{{- fail (printf "cloudConfig: not a YAML document: %s" $cfg.Error) -}}
{{- end -}}
{{- $dir := printf "%s/" (include "metal-ccm.bgpDir" .) -}}
{{- range $i, $p := (dig "bgp" "peers" list $cfg) -}}
{{- if and $p.passwordFile (not (hasPrefix $dir $p.passwordFile)) -}}
{{- fail (printf "cloudConfig: bgp.peers[%d].passwordFile %q: must be %s<key>, a key of the Secret bgpPasswords.secretName" $i $p.passwordFile $dir) -}}
{{- end -}}
{{- end -}}
{{- if include "metal-ccm.l2" . -}}
{{- $key := dig "l2" "secretFile" "" $cfg -}}
{{- $l2dir := printf "%s/" (include "metal-ccm.l2Dir" .) -}}
{{- if and (not $key) (not (dig "l2" "insecureMembership" false $cfg)) -}}
{{- fail (printf "cloudConfig: a pool is announced with L2: set l2.secretFile: %skey (the Secret l2Key.secretName, which the chart creates with l2Key.create), or l2.insecureMembership: true" $l2dir) -}}
{{- end -}}
{{- if and $key (not (hasPrefix $l2dir $key)) -}}
{{- fail (printf "cloudConfig: l2.secretFile %q: must be %s<key>, a key of the Secret l2Key.secretName" $key $l2dir) -}}
{{- end -}}
{{- end -}}
{{ .Values.cloudConfig }}
{{- end -}}

{{/*
The node agents' DaemonSets, a YAML list of {name, rack, nodeSelector,
notIn, keys}: one for every node (agent.nodeSelector), or with agent.racks
one per rack (its one label added to the nodeSelector) and one for the
nodes in no rack (notIn: label key -> the racks' values, as NotIn node
affinity). keys are the keys of the BGP password Secret each mounts: those
of the peers its nodes may select when bgp.announceFrom is Nodes (the
agents speak BGP), none otherwise (the replicas alone speak it). A peer may
select a rack's nodes unless its nodeSelector's matchLabels gives the
rack's label key another value; it may select nodes in no rack unless its
matchLabels is one of the racks' labels. matchExpressions are not read:
such a peer's password goes to every set (never one too few).
*/}}
{{- define "metal-ccm.agentSets" -}}
{{- $cfg := fromYaml .Values.cloudConfig -}}
{{- $dir := printf "%s/" (include "metal-ccm.bgpDir" .) -}}
{{- $peers := list -}}
{{- if eq (dig "bgp" "announceFrom" "Replicas" $cfg) "Nodes" -}}
{{- $peers = dig "bgp" "peers" list $cfg -}}
{{- end -}}
{{- $base := .Values.agent.nodeSelector | default dict -}}
{{- $sets := list -}}
{{- $notIn := dict -}}
{{- $seen := dict -}}
{{- range $i, $r := .Values.agent.racks -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$" (toString $r.name)) -}}
{{- fail (printf "agent.racks[%d].name %q: must be a DNS label of at most 32 characters" $i (toString $r.name)) -}}
{{- end -}}
{{- if hasKey $seen $r.name -}}
{{- fail (printf "agent.racks[%d].name %q: another rack has it" $i $r.name) -}}
{{- end -}}
{{- $_ := set $seen $r.name true -}}
{{- if ne (len ($r.label | default dict)) 1 -}}
{{- fail (printf "agent.racks[%d].label: must be one node label, key: value" $i) -}}
{{- end -}}
{{- $k := keys $r.label | first -}}
{{- $v := get $r.label $k | toString -}}
{{- $_ := set $notIn $k (append (get $notIn $k | default list) $v) -}}
{{- $keys := list -}}
{{- range $peers -}}
{{- $ml := dig "nodeSelector" "matchLabels" dict . -}}
{{- if and .passwordFile (or (not (hasKey $ml $k)) (eq (get $ml $k | toString) $v)) -}}
{{- $keys = append $keys (trimPrefix $dir .passwordFile) -}}
{{- end -}}
{{- end -}}
{{- $sets = append $sets (dict "name" (printf "metal-node-agent-%s" $r.name) "rack" $r.name "nodeSelector" (merge (dict $k $v) (deepCopy $base)) "keys" ($keys | uniq | sortAlpha)) -}}
{{- end -}}
{{- $keys := list -}}
{{- range $peers -}}
{{- $ml := dig "nodeSelector" "matchLabels" dict . -}}
{{- $inRack := false -}}
{{- range $k, $vs := $notIn -}}
{{- if and (hasKey $ml $k) (has (get $ml $k | toString) $vs) -}}
{{- $inRack = true -}}
{{- end -}}
{{- end -}}
{{- if and .passwordFile (not $inRack) -}}
{{- $keys = append $keys (trimPrefix $dir .passwordFile) -}}
{{- end -}}
{{- end -}}
{{- $sets = prepend $sets (dict "name" "metal-node-agent" "nodeSelector" $base "notIn" $notIn "keys" ($keys | uniq | sortAlpha)) -}}
{{- toYaml $sets -}}
{{- end -}}

{{/* The manager's flags. */}}
{{- define "metal-ccm.args" -}}
- --cloud-provider=metal
- --cloud-config={{ include "metal-ccm.configDir" . }}/cloud-config.yaml
- --leader-elect={{ .Values.leaderElection.enabled }}
- --leader-elect-resource-name=cloud-controller-manager
- --leader-elect-resource-namespace={{ .Release.Namespace }}
- --bind-address={{ .Values.metrics.bindAddress }}
- --secure-port={{ .Values.metrics.port }}
- --v={{ .Values.logLevel }}
{{- range .Values.extraArgs }}
- {{ . }}
{{- end }}
{{- end -}}
