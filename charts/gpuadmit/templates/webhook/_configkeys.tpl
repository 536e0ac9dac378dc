{{/*
gpuadmit.refuseMisspeltKeys fails the render when a key of config.devices
that gpuadmit does not read is within two edits (insertions, deletions,
substitutions, transpositions of adjacent characters) of a key it reads in
the same place: memoryFactr: 1024 ignored would charge a 20 GiB pod 20 MiB.
The server refuses the same configuration at start-up; HAMi's own keys
(deviceSplitCount, resourceVCountName, ...) and keys far from every key
read are accepted (the server logs them as ignored). The lists are the
server's (pkg/apis/config/v1alpha1), which tests/chart checks. A template,
not values.schema.json: JSON Schema has no edit distance, and refusing
every key it does not list would refuse the keys a later HAMi adds.
*/}}
{{- define "gpuadmit.refuseMisspeltKeys" -}}
{{- $named := list "resourceCountName" "resourceMemoryName" "resourceCoreName" }}
{{- $read := dict
  "nvidia" (list "resourceCountName" "resourceMemoryName" "resourceMemoryPercentageName" "resourceCoreName" "defaultMemory" "defaultCores" "defaultGPUNum" "memoryFactor" "exclusiveCores")
  "cambricon" $named "mthreads" $named "amd" $named
  "hygon" (append $named "memoryFactor")
  "vastai" (list "resourceCountName") "biren" (list "resourceCountName")
  "ascend" (list "enabled") "iluvatar" (list "enabled")
  "metax" (list "resourceCountName" "resourceVCountName" "resourceVMemoryName" "resourceVCoreName")
  "enflame" (list "resourceNameGCU" "resourceNameDRSGCU" "resourceNameGCUMemory" "resourceNameGCUCore")
  "kunlun" (list "resourceCountName" "resourceVCountName" "resourceVMemoryName")
  "awsneuron" (list "resourceCountName" "resourceCoreName")
  "iluvatars[]" (list "chipName" "commonWord" "resourceCountName" "resourceMemoryName" "resourceCoreName")
  "vnpus" (list "configs")
  "vnpus[]" (list "chipName" "commonWord" "resourceName" "resourceMemoryName" "resourceCoreName" "memoryAllocatable" "memoryCapacity" "memoryFactor" "aiCore" "aiCPU" "superPod" "templates")
  "templates[]" (list "name" "memory" "aiCore" "aiCPU") }}
{{- $devices := .Values.config.devices | default dict }}
{{- range $section, $v := $devices }}
  {{- if kindIs "map" $v }}
    {{- include "gpuadmit.checkKeys" (list (printf "config.devices.%s" $section) $v (get $read $section)) }}
    {{- if eq $section "vnpus" }}{{ include "gpuadmit.checkChips" (list "config.devices.vnpus.configs" ($v.configs | default list) $read) }}{{ end }}
  {{- else if and (kindIs "slice" $v) (eq $section "iluvatars") }}
    {{- range $i, $chip := $v }}{{ include "gpuadmit.checkKeys" (list (printf "config.devices.iluvatars[%d]" $i) $chip (get $read "iluvatars[]")) }}{{ end }}
  {{- else if and (kindIs "slice" $v) (eq $section "vnpus") }}
    {{- include "gpuadmit.checkChips" (list "config.devices.vnpus" $v $read) }}
  {{- end }}
{{- end }}
{{- end }}

{{/* gpuadmit.checkChips checks the keys of a list of Ascend chips and of their templates. */}}
{{- define "gpuadmit.checkChips" -}}
{{- $path := index . 0 }}{{ $read := index . 2 }}
{{- range $i, $chip := index . 1 }}
  {{- if kindIs "map" $chip }}
    {{- include "gpuadmit.checkKeys" (list (printf "%s[%d]" $path $i) $chip (get $read "vnpus[]")) }}
    {{- range $j, $t := ($chip.templates | default list) }}
      {{- if kindIs "map" $t }}{{ include "gpuadmit.checkKeys" (list (printf "%s[%d].templates[%d]" $path $i $j) $t (get $read "templates[]")) }}{{ end }}
    {{- end }}
  {{- end }}
{{- end }}
{{- end }}

{{/* gpuadmit.checkKeys fails on a key of a mapping within two edits of a key read there, naming the nearest (the first by name of the nearest). */}}
{{- define "gpuadmit.checkKeys" -}}
{{- $path := index . 0 }}{{ $read := index . 2 | default list }}
{{- $hami := list "iluvatar" "enabled" "resourcePriorityName" "overwriteEnv" "preConfiguredDeviceMemory" "deviceSplitCount"
  "deviceMemoryScaling" "deviceCoreScaling" "enableNumaTopology" "gpuCorePolicy" "libCudaLogLevel" "runtimeClassName"
  "migProfileAllowlist" "knownMigGeometries" "disableCoreLimit" "migStrategy" "sgpuTopologyAware" "memoryPerCard" "hamiVnpuCore"
  "configs" "templates" "resourcePercentageName" "resourceCountName" "resourceMemoryName" "resourceCoreName"
  "resourceMemoryPercentageName" "resourceVCountName" "resourceVMemoryName" "resourceVCoreName" "resourceName" }}
{{- range $key, $_ := index . 1 }}
  {{- if not (or (has $key $read) (has $key $hami)) }}
    {{- $meant := "" }}{{ $least := 3 }}
    {{- range $r := $read }}
      {{- $d := include "gpuadmit.within2" (list $key $r) }}
      {{- if and $d (or (lt (atoi $d) $least) (and (eq (atoi $d) $least) (lt $r $meant))) }}{{ $meant = $r }}{{ $least = atoi $d }}{{ end }}
    {{- end }}
    {{- if $meant }}
      {{- $msg := printf "%s.%s: unknown key %q: did you mean %s? (a key gpuadmit reads; HAMi's keys it does not read are accepted; see docs/configuration.md)" $path $key $key $meant }}
      {{- fail $msg }}
      {{- /* helm lint only logs a fail: calling a template of that name is an error it reports */}}
      {{- include $msg $ }}
    {{- end }}
  {{- end }}
{{- end }}
{{- end }}

{{/* gpuadmit.within2 is the edits between two keys (optimal string alignment distance) when at most two, else "". */}}
{{- define "gpuadmit.within2" -}}
{{- $a := index . 0 }}{{ $b := index . 1 }}
{{- $la := len $a }}{{ $lb := len $b }}
{{- if and (le (sub $la $lb | int) 2) (le (sub $lb $la | int) 2) }}
  {{- $prev2 := list }}
  {{- $prev := list }}
  {{- range $j := until (int (add1 $lb)) }}{{ $prev = append $prev $j }}{{ end }}
  {{- range $i := untilStep 1 (int (add1 $la)) 1 }}
    {{- $cur := list $i }}
    {{- $ai := substr (int (sub $i 1)) $i $a }}
    {{- range $j := untilStep 1 (int (add1 $lb)) 1 }}
      {{- $bj := substr (int (sub $j 1)) $j $b }}
      {{- $cost := 1 }}{{ if eq $ai $bj }}{{ $cost = 0 }}{{ end }}
      {{- $d := min (add1 (index $prev $j)) (add1 (index $cur (int (sub $j 1)))) (add (index $prev (int (sub $j 1))) $cost) }}
      {{- if and (gt $i 1) (gt $j 1) }}
        {{- if and (eq $ai (substr (int (sub $j 2)) (int (sub $j 1)) $b)) (eq (substr (int (sub $i 2)) (int (sub $i 1)) $a) $bj) }}
          {{- $d = min $d (add1 (index $prev2 (int (sub $j 2)))) }}
        {{- end }}
      {{- end }}
      {{- $cur = append $cur $d }}
    {{- end }}
    {{- $prev2 = $prev }}{{ $prev = $cur }}
  {{- end }}
  {{- if le (index $prev $lb | int) 2 }}{{ index $prev $lb }}{{ end }}
{{- end }}
{{- end }}
