{{/*
Names. gpuadmit.name is the chart's name (nameOverride); gpuadmit.fullname
prefixes every object's name (fullnameOverride, else gpuadmit.name; the
release's name is not part of it, so that a release of any name keeps the
names the docs use: gpuadmit-webhook, ...). The schema keeps both short
enough for the longest suffix below (a name is at most 63 characters).
*/}}
{{- define "gpuadmit.name" -}}
{{- default .Chart.Name .Values.nameOverride -}}
{{- end }}

{{- define "gpuadmit.fullname" -}}
{{- default (include "gpuadmit.name" .) .Values.fullnameOverride -}}
{{- end }}

{{/* The webhook's Deployment, ServiceAccount, Service, RBAC, ... (and its pods' app.kubernetes.io/name). */}}
{{- define "gpuadmit.webhookName" -}}
{{- include "gpuadmit.fullname" . }}-webhook
{{- end }}

{{/* The NVML agent's DaemonSet, ServiceAccount and RBAC (and its pods' app.kubernetes.io/name). */}}
{{- define "gpuadmit.agentName" -}}
{{- include "gpuadmit.fullname" . }}-nvml-agent
{{- end }}

{{/*
The configuration's ConfigMap: gpuadmit-config whatever the overrides, the
name the command line reads in gpuadmit's namespace (--gpuadmit-namespace).
*/}}
{{- define "gpuadmit.configName" -}}gpuadmit-config{{- end }}

{{/*
The accepted policy set's ConfigMap: gpuadmit-policy-accepted whatever the
overrides, the name the replicas read and write. With it and
gpuadmit.configName, helm refuses a second release in the same namespace
(the replicas of one namespace are one set: their Leases, their
GPUReservationSets): a second release goes in its own namespace.
*/}}
{{- define "gpuadmit.acceptedPolicyName" -}}gpuadmit-policy-accepted{{- end }}

{{/* The Secret of the self-managed CA and serving certificate (the webhook's --cert-secret). */}}
{{- define "gpuadmit.tlsSecretName" -}}
{{- include "gpuadmit.webhookName" . }}-tls
{{- end }}

{{/*
Labels of every object: what the kustomize base has always carried, plus
the chart's version.
*/}}
{{- define "gpuadmit.labels" -}}
app.kubernetes.io/part-of: gpuadmit
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{- end }}

{{- define "gpuadmit.webhookLabels" -}}
app.kubernetes.io/name: {{ include "gpuadmit.webhookName" . }}
{{ include "gpuadmit.labels" . }}
{{- end }}

{{- define "gpuadmit.agentLabels" -}}
app.kubernetes.io/name: {{ include "gpuadmit.agentName" . }}
{{ include "gpuadmit.labels" . }}
{{- end }}

{{/*
An image reference (dict "image" <image value> "chart" .Chart "global"
.Values.global): [registry/]repository, then @digest when set, else :tag
(the tag defaulting to appVersion). The registry is image.registry, else
global.imageRegistry, prepended to the repository when set.
*/}}
{{- define "gpuadmit.image" -}}
{{- $registry := .image.registry | default ((.global | default dict).imageRegistry) | default "" | trimSuffix "/" -}}
{{- $repo := .image.repository -}}
{{- if $registry }}{{ $repo = printf "%s/%s" $registry $repo }}{{ end -}}
{{- if .image.digest }}{{ printf "%s@%s" $repo .image.digest }}{{ else }}{{ printf "%s:%s" $repo (default .chart.AppVersion .image.tag) }}{{ end -}}
{{- end }}

{{/*
A pod template's labels (dict "labels" <the chart's labels, as rendered>
"extra" <podLabels> "value" <the value's name>): the chart's, then the extra
ones. An extra label may not change one of the chart's (the selector's
app.kubernetes.io/name among them): rendering fails naming it.
*/}}
{{- define "gpuadmit.podLabels" -}}
{{- $own := .labels | fromYaml -}}
{{- .labels }}
{{- $extra := .extra | default dict -}}
{{- range $k := keys $extra | sortAlpha }}
{{- if and (hasKey $own $k) (ne (toString (index $own $k)) (toString (index $extra $k))) }}
{{- fail (printf "%s: %q is one of the chart's own pod labels (%s: %s), which %s cannot change (app.kubernetes.io/name selects the pods)" $.value $k $k (index $own $k) $.value) }}
{{- end }}
{{- end }}
{{- $add := dict -}}
{{- range $k, $v := $extra }}{{ if not (hasKey $own $k) }}{{ $_ := set $add $k $v }}{{ end }}{{ end -}}
{{- with $add }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
gpuadmit.draEnabled: "true" when the chart governs DRA ResourceClaims:
dra.enabled true, or "auto" where the API server serves resource.k8s.io/v1
and is 1.34 or later (helm's capabilities: the cluster's at install and
upgrade; helm template assumes every API it knows is served, so its
--kube-version decides there). Off, config.dra.deviceClasses is rendered
empty, and neither the ResourceClaim webhook nor the RBAC on
resource.k8s.io is rendered: a cluster without that API (Kubernetes before
1.34) runs the rest.
*/}}
{{- define "gpuadmit.draEnabled" -}}
{{- $v := toString .Values.dra.enabled -}}
{{- if eq $v "true" -}}true
{{- else if eq $v "auto" -}}
{{- if and (.Capabilities.APIVersions.Has "resource.k8s.io/v1") (semverCompare ">=1.34.0-0" .Capabilities.KubeVersion.Version) }}true{{ end -}}
{{- end -}}
{{- end }}

{{/*
gpuadmit.deviceClassNames: the DeviceClasses config.dra governs, as a CEL
list ("" when none, or when DRA is off: gpuadmit.draEnabled).
*/}}
{{- define "gpuadmit.deviceClassNames" -}}
{{- if include "gpuadmit.draEnabled" . -}}
{{- $quoted := list -}}
{{- range ((.Values.config.dra | default dict).deviceClasses | default list) }}{{ $quoted = append $quoted (printf "'%s'" .name) }}{{ end -}}
{{- if $quoted }}{{ printf "[%s]" (join ", " $quoted) }}{{ end -}}
{{- end -}}
{{- end -}}

{{/*
The managed resource names, from the one place they are set: the devices
section of the configuration. Every governed family's names: nvidia's,
those of each HAMi section present (a name it leaves out at HAMi's default,
as the server reads it: gpuadmit.hamiDefaultNames), gpushare's when
present (iluvatars' and vnpus' only with config.devices.iluvatar.enabled
and config.devices.ascend.enabled). The webhooks' matchConditions use them.
With hami.deviceConfigMap the server reads HAMi's sections from that
ConfigMap (beside config.devices' gpushare and switches): its families'
names are added when helm can read it (install, upgrade), to those of
config.devices (all helm template sees).
*/}}
{{- define "gpuadmit.resourceNames" -}}
{{- $names := include "gpuadmit.deviceResourceNames" .Values.config.devices | fromJsonArray -}}
{{- $switches := pick .Values.config.devices "ascend" "iluvatar" -}}
{{- with include "gpuadmit.hamiDevices" . | fromYaml -}}
{{- $names = concat $names (include "gpuadmit.deviceResourceNames" (merge $switches .) | fromJsonArray) -}}
{{- end -}}
{{- $quoted := list -}}
{{- range without (uniq $names) "" }}{{ $quoted = append $quoted (printf "'%s'" .) }}{{ end -}}
{{- printf "[%s]" (join ", " $quoted) -}}
{{- end }}

{{/*
gpuadmit.deviceResourceNames: the resource names of every family a devices
section (config.devices, or HAMi's device-config.yaml) governs, as a JSON
list, "" for a name left empty.
*/}}
{{- define "gpuadmit.deviceResourceNames" -}}
{{- $d := . | default dict -}}
{{- $n := $d.nvidia | default dict -}}
{{- $names := list ($n.resourceCountName | default "nvidia.com/gpu") ($n.resourceMemoryName | default "nvidia.com/gpumem")
  ($n.resourceMemoryPercentageName | default "nvidia.com/gpumem-percentage") ($n.resourceCoreName | default "nvidia.com/gpucores") -}}
{{- $defaults := include "gpuadmit.hamiDefaultNames" . | fromYaml -}}
{{- range $sec := list "cambricon" "hygon" "metax" "enflame" "mthreads" "kunlun" "awsneuron" "amd" "vastai" "biren" -}}
{{- if hasKey $d $sec -}}
{{- $s := index $d $sec | default dict -}}
{{- $def := index $defaults $sec -}}
{{- range $key := keys $def | sortAlpha }}{{ $names = append $names (index $s $key | default (index $def $key)) }}{{ end -}}
{{- end -}}
{{- end -}}
{{- $iluvatars := ternary ($d.iluvatars | default list) list (($d.iluvatar | default dict).enabled | default false) -}}
{{- range $c := $iluvatars -}}
{{- $chip := $c.chipName | default "" -}}
{{- $names = append $names ($c.resourceCountName | default (printf "iluvatar.ai/%s-vgpu" $chip)) -}}
{{- $names = append $names ($c.resourceMemoryName | default (printf "iluvatar.ai/%s.vMem" $chip)) -}}
{{- $names = append $names ($c.resourceCoreName | default (printf "iluvatar.ai/%s.vCore" $chip)) -}}
{{- end -}}
{{- $vnpus := ternary ($d.vnpus | default list) list (($d.ascend | default dict).enabled | default false) -}}
{{- if kindIs "map" $vnpus }}{{ $vnpus = $vnpus.configs | default list }}{{ end -}}
{{- range $c := $vnpus -}}
{{- $word := get $defaults.vnpuWords (toString ($c.chipName | default "")) -}}
{{- $base := ternary (printf "huawei.com/%s" $word) "" (ne $word "") -}}
{{- $names = append $names ($c.resourceName | default $base) -}}
{{- $names = append $names ($c.resourceMemoryName | default (ternary (printf "%s-memory" $base) "" (ne $base ""))) -}}
{{- $names = append $names ($c.resourceCoreName | default (ternary (printf "%s-core" $base) "" (ne $base ""))) -}}
{{- end -}}
{{- if hasKey $d "gpushare" }}{{ $names = append (append $names "aliyun.com/gpu-count") "aliyun.com/gpu-mem" }}{{ end -}}
{{- toJson $names -}}
{{- end }}

{{/*
gpuadmit.hamiConfigMapRef: the ConfigMap hami.deviceConfigMap names, as
YAML {namespace, name} ("" when empty): "namespace/name", or "name" in the
release namespace.
*/}}
{{- define "gpuadmit.hamiConfigMapRef" -}}
{{- with .Values.hami.deviceConfigMap -}}
{{- $parts := splitList "/" . -}}
{{- if eq (len $parts) 2 -}}
namespace: {{ index $parts 0 }}
name: {{ index $parts 1 }}
{{- else -}}
namespace: {{ $.Release.Namespace }}
name: {{ . }}
{{- end -}}
{{- end -}}
{{- end }}

{{/*
gpuadmit.clusterReachable: "true" when helm renders against a cluster
(install, upgrade, --dry-run=server): its lookup finds kube-system, which
every cluster has. helm template and client-side dry runs find nothing.
*/}}
{{- define "gpuadmit.clusterReachable" -}}
{{- if lookup "v1" "Namespace" "" "kube-system" }}true{{ end -}}
{{- end }}

{{/*
HAMi's device config from hami.deviceConfigMap, as helm reads it at install
and upgrade (lookup): the YAML of its device-config.yaml key, "" when
hami.deviceConfigMap is empty or helm renders without a cluster (helm
template). Against a cluster, rendering fails when the ConfigMap or its key
is missing (the webhook would not start) or the key is not valid YAML.
*/}}
{{- define "gpuadmit.hamiDeviceConfig" -}}
{{- with include "gpuadmit.hamiConfigMapRef" . | fromYaml -}}
{{- $where := printf "%s/%s" .namespace .name -}}
{{- $cm := lookup "v1" "ConfigMap" .namespace .name -}}
{{- $data := $cm.data | default dict -}}
{{- if and (not $cm) (include "gpuadmit.clusterReachable" $) -}}
{{- fail (printf "hami.deviceConfigMap: ConfigMap %s does not exist (or helm may not read it). The webhook reads HAMi's device config from it when it starts and would not start without it (with webhook.failurePolicy Fail, GPU pods would be refused). Install HAMi first (its chart renders <release>-scheduler-device in its namespace: kube-system/hami-scheduler-device for release hami in kube-system), or set hami.deviceConfigMap to the namespace/name of HAMi's ConfigMap" $where) -}}
{{- end -}}
{{- if and $cm (not (hasKey $data "device-config.yaml")) -}}
{{- fail (printf "hami.deviceConfigMap: ConfigMap %s has no key device-config.yaml, where HAMi's chart writes its device config (keys: %s); the webhook would not start" $where (keys $data | sortAlpha | join ", ")) -}}
{{- end -}}
{{- $text := index $data "device-config.yaml" | default "" -}}
{{- if $text -}}
{{- $doc := $text | fromYaml -}}
{{- if hasKey $doc "Error" -}}
{{- fail (printf "hami.deviceConfigMap: the key device-config.yaml of ConfigMap %s is not valid YAML: %s" $where $doc.Error) -}}
{{- end -}}
{{- $text -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/* gpuadmit.hamiDevices: HAMi's device config read from hami.deviceConfigMap, re-rendered as YAML ("" when unread). */}}
{{- define "gpuadmit.hamiDevices" -}}
{{- with include "gpuadmit.hamiDeviceConfig" . }}{{ . | fromYaml | toYaml }}{{ end -}}
{{- end }}

{{/*
The nvidia family's resource names (a YAML map), for NOTES.txt: from the
ConfigMap of hami.deviceConfigMap when helm reads it, else config.devices.
*/}}
{{- define "gpuadmit.nvidiaNames" -}}
{{- $n := .Values.config.devices.nvidia -}}
{{- with include "gpuadmit.hamiDevices" . | fromYaml }}{{ with .nvidia }}{{ $n = . }}{{ end }}{{ end -}}
resourceCountName: {{ $n.resourceCountName | default "nvidia.com/gpu" }}
resourceMemoryName: {{ $n.resourceMemoryName | default "nvidia.com/gpumem" }}
resourceCoreName: {{ $n.resourceCoreName | default "nvidia.com/gpucores" }}
{{- end }}

{{/*
HAMi's default resource names of each section (its chart's values, the
defaults of effective.HAMiFamilies), and the Ascend chips' common words
(the names huawei.com/<word>, -memory, -core). tests/chart checks them
against the server's families.
*/}}
{{- define "gpuadmit.hamiDefaultNames" -}}
cambricon: {resourceCountName: cambricon.com/vmlu, resourceMemoryName: cambricon.com/mlu.smlu.vmemory, resourceCoreName: cambricon.com/mlu.smlu.vcore}
hygon: {resourceCountName: hygon.com/dcunum, resourceMemoryName: hygon.com/dcumem, resourceCoreName: hygon.com/dcucores}
metax: {resourceCountName: metax-tech.com/gpu, resourceVCountName: metax-tech.com/sgpu, resourceVMemoryName: metax-tech.com/vmemory, resourceVCoreName: metax-tech.com/vcore}
enflame: {resourceNameGCU: enflame.com/gcu, resourceNameDRSGCU: enflame.com/drs-gcu, resourceNameGCUMemory: enflame.com/gcu-memory, resourceNameGCUCore: enflame.com/gcu-core}
mthreads: {resourceCountName: mthreads.com/vgpu, resourceMemoryName: mthreads.com/sgpu-memory, resourceCoreName: mthreads.com/sgpu-core}
kunlun: {resourceCountName: kunlunxin.com/xpu, resourceVCountName: kunlunxin.com/vxpu, resourceVMemoryName: kunlunxin.com/vxpu-memory}
awsneuron: {resourceCountName: aws.amazon.com/neuron, resourceCoreName: aws.amazon.com/neuroncore}
amd: {resourceCountName: amd.com/gpu, resourceMemoryName: amd.com/gpumem, resourceCoreName: amd.com/gpucores}
vastai: {resourceCountName: vastaitech.com/va}
biren: {resourceCountName: birentech.com/gpu}
vnpuWords: {"910A": Ascend910A, "910B2": Ascend910B2, "910B3": Ascend910B3, "910B4-1": Ascend910B4-1, "910B4": Ascend910B4, "310P3": Ascend310P, "Ascend910": Ascend910C}
{{- end }}

{{/* The namespaces whose pods never reach the webhooks. */}}
{{- define "gpuadmit.excludedNamespaces" -}}
{{- $ns := list .Release.Namespace -}}
{{- range .Values.webhook.excludeNamespaces }}{{ if not (has . $ns) }}{{ $ns = append $ns . }}{{ end }}{{ end -}}
{{- toJson (sortAlpha $ns) -}}
{{- end }}

{{/*
The webhooks' namespaceSelector: the excluded namespaces by name, and
webhook.namespaceSelector's terms (matchLabels, matchExpressions) beside.
*/}}
{{- define "gpuadmit.namespaceSelector" -}}
{{- $sel := .Values.webhook.namespaceSelector | default dict -}}
{{- with $sel.matchLabels }}
matchLabels:
  {{- toYaml . | nindent 2 }}
{{- end }}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: {{ include "gpuadmit.excludedNamespaces" . }}
  {{- with $sel.matchExpressions }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/*
The labels of the chart's policy ConfigMap: the equality terms of
config.policy.configMapSelector ("k=v,k2=v2"), so that the server loads it.
*/}}
{{- define "gpuadmit.policyLabels" -}}
{{- range splitList "," .Values.config.policy.configMapSelector }}
{{- $term := trim . }}
{{- if not (regexMatch "^[A-Za-z0-9./_-]+==?[A-Za-z0-9._-]*$" $term) }}
{{- fail (printf "config.policy.configMapSelector: %q is not a key=value term; the chart labels its policy ConfigMap from it" $term) }}
{{- end }}
{{- $kv := regexSplit "==?" $term 2 }}
{{ index $kv 0 }}: {{ index $kv 1 | quote }}
{{- end }}
{{- end }}

{{/*
The ConfigMap holding the CA of the API server's client certificate
(webhook.clientAuth): the one named by existingConfigMap, or the chart's
gpuadmit-client-ca rendered from caBundle. Rendering fails when client
authentication is on without a CA, or with both.
*/}}
{{- define "gpuadmit.clientCAConfigMap" -}}
{{- $c := .Values.webhook.clientAuth -}}
{{- if and $c.caBundle $c.existingConfigMap -}}
{{- fail "webhook.clientAuth: set caBundle or existingConfigMap, not both" -}}
{{- else if $c.existingConfigMap -}}
{{- $c.existingConfigMap -}}
{{- else if not $c.caBundle -}}
{{- fail "webhook.clientAuth.enabled needs the CA of the API server's client certificate: set webhook.clientAuth.caBundle (PEM) or webhook.clientAuth.existingConfigMap" -}}
{{- else if not (contains "-----BEGIN CERTIFICATE-----" $c.caBundle) -}}
{{- fail "webhook.clientAuth.caBundle holds no PEM certificate (-----BEGIN CERTIFICATE-----)" -}}
{{- else -}}
{{ include "gpuadmit.fullname" . }}-client-ca
{{- end -}}
{{- end }}

{{/* The Secret whose ca.crt verifies the serving certificate (of the webhook and the metrics). */}}
{{- define "gpuadmit.servingSecret" -}}
{{- if eq .Values.certificates.mode "cert-manager" }}{{ include "gpuadmit.webhookName" . }}-cert-manager{{ else }}{{ include "gpuadmit.tlsSecretName" . }}{{ end -}}
{{- end }}

{{- define "gpuadmit.guardLabels" -}}
app.kubernetes.io/name: {{ include "gpuadmit.fullname" . }}-guards
{{ include "gpuadmit.labels" . }}
{{- end }}

{{/*
A guard's CEL condition "the request's user is none of users and in none of
groups" (dict "users" list "groups" list): the policies skip those requests.
*/}}
{{- define "gpuadmit.guardNotAllowed" -}}
{{- $terms := list -}}
{{- with .users }}{{ $terms = append $terms (printf "request.userInfo.username in %s" (toJson .)) }}{{ end -}}
{{- with .groups }}{{ $terms = append $terms (printf "(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in %s))" (toJson .)) }}{{ end -}}
{{- if $terms }}!({{ join " || " $terms }}){{ else }}true{{ end -}}
{{- end }}

{{/* Who a guard lets write (dict "users" list "groups" list), in words. */}}
{{- define "gpuadmit.guardWriters" -}}
{{- $parts := list -}}
{{- with .users }}{{ $parts = append $parts (join ", " .) }}{{ end -}}
{{- with .groups }}{{ $parts = append $parts (printf "members of %s" (join ", " .)) }}{{ end -}}
{{- if $parts }}{{ join " and " $parts }}{{ else }}nobody{{ end -}}
{{- end }}

{{/*
gpuadmit.durationSeconds: a Go duration (the schema's pattern: 8s, 1m30s,
500ms) in seconds, as a number.
*/}}
{{- define "gpuadmit.durationSeconds" -}}
{{- $units := dict "ns" 0.000000001 "us" 0.000001 "µs" 0.000001 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)" (toString .) -1 -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" . -}}
{{- $total = addf $total (mulf (float64 $num) (get $units (trimPrefix $num .))) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/*
gpuadmit.checkReviewTimeout fails rendering when config.admission.reviewTimeout
(8s when unset, the server's default) is not below webhook.timeoutSeconds:
the API server would stop waiting before gpuadmit's answer (and a replica
reading such a configuration refuses to start).
*/}}
{{- define "gpuadmit.checkReviewTimeout" -}}
{{- $review := ((.Values.config).admission).reviewTimeout | default "8s" -}}
{{- $seconds := include "gpuadmit.durationSeconds" $review | float64 -}}
{{- if ge $seconds (float64 .Values.webhook.timeoutSeconds) -}}
{{- fail (printf "config.admission.reviewTimeout (%s) must be below webhook.timeoutSeconds (%v): the API server would stop waiting before gpuadmit's answer. Lower config.admission.reviewTimeout below %vs or raise webhook.timeoutSeconds (at most 30) above it" $review .Values.webhook.timeoutSeconds .Values.webhook.timeoutSeconds) -}}
{{- end -}}
{{- end -}}

{{/*
gpuadmit.konnectivityLabels: the matchLabels (YAML) of the konnectivity
agents the NetworkPolicy admits on the webhook port, or "" when none:
networkPolicy.apiServer.konnectivity true admits k8s-app=konnectivity-agent
in kube-system; "auto" admits the label helm finds on such pods in
kube-system at install or upgrade (k8s-app or app =konnectivity-agent, not
on the host network), and nothing when it finds none (helm template, or no
konnectivity).
*/}}
{{- define "gpuadmit.konnectivityLabels" -}}
{{- $k := .Values.networkPolicy.apiServer.konnectivity -}}
{{- if eq (toString $k) "true" -}}
k8s-app: konnectivity-agent
{{- else if eq (toString $k) "auto" -}}
{{- $found := "" -}}
{{- range (lookup "v1" "Pod" "kube-system" "").items -}}
{{- if and (not $found) (not .spec.hostNetwork) -}}
{{- $labels := default dict .metadata.labels -}}
{{- if eq (get $labels "k8s-app" | toString) "konnectivity-agent" -}}{{- $found = "k8s-app" -}}
{{- else if eq (get $labels "app" | toString) "konnectivity-agent" -}}{{- $found = "app" -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- with $found -}}
{{ . }}: konnectivity-agent
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
gpuadmit.webhookPortOpen: "true" when any pod can reach the webhook port
and post reviews: client authentication off, and no NetworkPolicy, or one
that admits the port from any source (no CIDRs, no konnectivity agents).
*/}}
{{- define "gpuadmit.webhookPortOpen" -}}
{{- $np := .Values.networkPolicy -}}
{{- if not .Values.webhook.clientAuth.enabled -}}
{{- if or (not $np.enabled) (and (not $np.apiServer.cidrs) (not (include "gpuadmit.konnectivityLabels" .))) -}}
true
{{- end -}}
{{- end -}}
{{- end -}}
