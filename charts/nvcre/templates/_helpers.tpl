{{/* Names and labels shared by every template. */}}

{{- define "nvcre.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "nvcre.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "nvcre.labels" -}}
app.kubernetes.io/name: {{ include "nvcre.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The release's objects, any component (the ServiceMonitor adds its own component). */}}
{{- define "nvcre.instanceLabels" -}}
app.kubernetes.io/name: {{ include "nvcre.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nvcre.selectorLabels" -}}
{{ include "nvcre.instanceLabels" . }}
app.kubernetes.io/component: controller
{{- end -}}

{{/* The controller pod's labels: the selector, then controller.podLabels, which may not
repeat a selector key (that would render a duplicate key, or change the selector). */}}
{{- define "nvcre.podLabels" -}}
{{- $selector := include "nvcre.selectorLabels" . | fromYaml }}
{{- range $key, $_ := .Values.controller.podLabels }}
{{- if hasKey $selector $key }}
{{- fail (printf "controller.podLabels: %q is one of the chart's selector labels (%s), which it sets itself; use another key" $key (keys $selector | sortAlpha | join ", ")) }}
{{- end }}
{{- end }}
{{- include "nvcre.selectorLabels" . }}
{{- with .Values.controller.podLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "nvcre.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "nvcre.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "nvcre.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* ClusterRole names: the manager role (bound cluster-wide) and the run role (writes workloads). */}}
{{- define "nvcre.managerRole" -}}
{{- printf "%s-manager-role" (include "nvcre.fullname" .) -}}
{{- end -}}

{{- define "nvcre.runRole" -}}
{{- printf "%s-run-role" (include "nvcre.fullname" .) -}}
{{- end -}}

{{- define "nvcre.runBinding" -}}
{{- printf "%s-manager-run" (include "nvcre.fullname" .) -}}
{{- end -}}

{{- define "nvcre.validate" -}}
{{- if not (has .Values.rbac.scope (list "cluster" "namespaced")) -}}
{{- fail (printf "rbac.scope must be cluster or namespaced, got %q" .Values.rbac.scope) -}}
{{- end -}}
{{- end -}}
