{{/*
Labels of every object: what the kustomize base has always carried, plus
the chart's version.
*/}}
{{- define "gpuadmit.labels" -}}
app.kubernetes.io/part-of: gpuadmit
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{- end }}

{{- define "gpuadmit.webhookLabels" -}}
app.kubernetes.io/name: gpuadmit-webhook
{{ include "gpuadmit.labels" . }}
{{- end }}

{{- define "gpuadmit.agentLabels" -}}
app.kubernetes.io/name: gpuadmit-nvml-agent
{{ include "gpuadmit.labels" . }}
{{- end }}

{{/* An image reference: repository:tag, the tag defaulting to appVersion. */}}
{{- define "gpuadmit.image" -}}
{{- printf "%s:%s" .image.repository (default .chart.AppVersion .image.tag) -}}
{{- end }}

{{/*
The managed resource names, from the one place they are set: the device
section of the configuration. The webhooks' matchConditions use them.
*/}}
{{- define "gpuadmit.resourceNames" -}}
{{- $n := .Values.config.devices.nvidia -}}
{{- $names := list $n.resourceCountName $n.resourceMemoryName $n.resourceMemoryPercentageName $n.resourceCoreName -}}
{{- $quoted := list -}}
{{- range $names }}{{ $quoted = append $quoted (printf "'%s'" .) }}{{ end -}}
{{- printf "[%s]" (join ", " $quoted) -}}
{{- end }}

{{/* The namespaces whose pods never reach the webhooks. */}}
{{- define "gpuadmit.excludedNamespaces" -}}
{{- $ns := list .Release.Namespace -}}
{{- range .Values.webhook.excludeNamespaces }}{{ if not (has . $ns) }}{{ $ns = append $ns . }}{{ end }}{{ end -}}
{{- toJson (sortAlpha $ns) -}}
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
gpuadmit-client-ca
{{- end -}}
{{- end }}

{{/* The Secret whose ca.crt verifies the serving certificate (of the webhook and the metrics). */}}
{{- define "gpuadmit.servingSecret" -}}
{{- if eq .Values.certificates.mode "cert-manager" }}gpuadmit-webhook-cert-manager{{ else }}gpuadmit-webhook-tls{{ end -}}
{{- end }}

{{- define "gpuadmit.guardLabels" -}}
app.kubernetes.io/name: gpuadmit-guards
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
