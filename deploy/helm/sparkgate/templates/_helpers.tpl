{{- define "sparkgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sparkgate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "sparkgate.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "sparkgate.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "sparkgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sparkgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sparkgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "sparkgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "sparkgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sparkgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The RBAC rules: read driver pods (and SparkApplications), nothing else. */}}
{{- define "sparkgate.rules" -}}
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch]
# Pod logs of the apps' driver and executor pods, served to users who may
# view the app (read only).
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
{{- if .Values.watch.sparkApplications }}
- apiGroups: [sparkoperator.k8s.io]
  resources: [sparkapplications]
  verbs: [get, list, watch]
{{- end }}
{{- end }}
