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

{{/* Whether the agents get CAP_NET_RAW: agent.l2, else (auto) an L2 pool in cloudConfig. */}}
{{- define "metal-ccm.agentNetRaw" -}}
{{- $l2 := .Values.agent.l2 -}}
{{- if kindIs "bool" $l2 -}}{{- if $l2 -}}true{{- end -}}
{{- else if include "metal-ccm.l2" . -}}true{{- end -}}
{{- end -}}

{{/* The L2 witness Lease as NAMESPACE/NAME, empty when there is none. */}}
{{- define "metal-ccm.l2Witness" -}}
{{- if and .Values.agent.enabled .Values.agent.l2Witness.enabled (include "metal-ccm.agentNetRaw" .) -}}
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
The keys of the BGP password Secret the node agents read, comma-separated:
those of the peers' passwordFiles when bgp.announceFrom is Nodes (the
agents speak BGP), none otherwise (the replicas alone speak it). The
agents mount only these.
*/}}
{{- define "metal-ccm.agentBGPKeys" -}}
{{- $cfg := fromYaml .Values.cloudConfig -}}
{{- $keys := list -}}
{{- if eq (dig "bgp" "announceFrom" "Replicas" $cfg) "Nodes" -}}
{{- $dir := printf "%s/" (include "metal-ccm.bgpDir" .) -}}
{{- range (dig "bgp" "peers" list $cfg) -}}
{{- if .passwordFile -}}
{{- $keys = append $keys (trimPrefix $dir .passwordFile) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $keys | uniq | sortAlpha | join "," -}}
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
