{{/* Names ------------------------------------------------------------------------------------------- */}}
{{- define "blockfeed.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "blockfeed.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else if contains (include "blockfeed.name" .) .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "blockfeed.name" .) | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "blockfeed.apiName" -}}{{ include "blockfeed.fullname" . }}-api{{- end }}
{{- define "blockfeed.controllerName" -}}{{ include "blockfeed.fullname" . }}-controller{{- end }}
{{- define "blockfeed.postgresName" -}}{{ include "blockfeed.fullname" . }}-postgresql{{- end }}
{{- define "blockfeed.cowrieName" -}}{{ include "blockfeed.fullname" . }}-cowrie{{- end }}

{{- define "blockfeed.controllerServiceAccount" -}}
{{- if .Values.controller.serviceAccount.create }}
{{- default (include "blockfeed.controllerName" .) .Values.controller.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.controller.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "blockfeed.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{/* Labels: app.kubernetes.io/* on everything; selectors use name, instance and component only. -------- */}}
{{- define "blockfeed.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "blockfeed.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: blockfeed
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* (dict "ctx" $ "component" "api-server") */}}
{{- define "blockfeed.componentLabels" -}}
{{ include "blockfeed.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "blockfeed.selectorLabels" -}}
app.kubernetes.io/name: {{ include "blockfeed.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Secrets: the chart's own, and where the api-server finds DATABASE_URL and the ingest token. --------- */}}
{{- define "blockfeed.apiSecretName" -}}{{ include "blockfeed.apiName" . }}{{- end }}

{{- define "blockfeed.databaseUrlSecretRef" -}}
{{- if eq .Values.database.type "bundled" }}
name: {{ default (include "blockfeed.postgresName" .) .Values.database.bundled.existingSecret }}
key: database-url
{{- else if eq .Values.database.type "cloudnativepg" }}
{{- /* The operator's Secret for the database's owner; its uri names the read-write Service (the primary). */}}
name: {{ include "blockfeed.postgresName" . }}-app
key: uri
{{- else if .Values.database.external.existingSecret }}
name: {{ .Values.database.external.existingSecret }}
key: {{ .Values.database.external.existingSecretKey }}
{{- else }}
name: {{ include "blockfeed.apiSecretName" . }}
key: database-url
{{- end }}
{{- end }}

{{/* The CloudNativePG Cluster's server CA: its Secret (the operator's <cluster>-ca unless the Cluster names one)
     and where the api-server reads it. */}}
{{- define "blockfeed.postgresCaSecret" -}}
{{- dig "certificates" "serverCASecret" "" .Values.database.cloudnativepg.clusterSpec | default (printf "%s-ca" (include "blockfeed.postgresName" .)) }}
{{- end }}
{{- define "blockfeed.postgresCaDir" -}}/etc/blockfeed/postgresql-ca{{- end }}

{{- define "blockfeed.ingestTokenSecretRef" -}}
{{- if .Values.api.ingest.existingSecret }}
name: {{ .Values.api.ingest.existingSecret }}
key: {{ .Values.api.ingest.existingSecretKey }}
{{- else }}
name: {{ include "blockfeed.apiSecretName" . }}
key: ingest-token
{{- end }}
{{- end }}

{{/* A value kept across upgrades: the existing Secret's, else the given one, else a random one.
     (dict "ctx" $ "secret" NAME "key" KEY "given" VALUE "length" N) */}}
{{- define "blockfeed.stickySecretValue" -}}
{{- $existing := lookup "v1" "Secret" .ctx.Release.Namespace .secret }}
{{- if .given }}
{{- .given }}
{{- else if and $existing (index ($existing.data | default dict) .key) }}
{{- index $existing.data .key | b64dec }}
{{- else }}
{{- randAlphaNum (int .length) }}
{{- end }}
{{- end }}

{{/* Hardened pod and container settings shared by every workload. */}}
{{- define "blockfeed.podSecurityContext" -}}
{{ toYaml .Values.podSecurityContext }}
{{- end }}

{{- define "blockfeed.containerSecurityContext" -}}
{{ toYaml .Values.containerSecurityContext }}
{{- end }}

{{/* Refuse contradictory settings with a message that names the value to change. */}}
{{- define "blockfeed.validate" -}}
{{- if and (eq .Values.database.type "external") .Values.api.enabled (not .Values.database.external.url) (not .Values.database.external.existingSecret) }}
{{- fail "database.type=external needs database.external.url or database.external.existingSecret (or set database.type=bundled for an evaluation database)" }}
{{- end }}
{{- if and .Values.database.external.url .Values.database.external.existingSecret }}
{{- fail "set only one of database.external.url and database.external.existingSecret" }}
{{- end }}
{{- if and .Values.api.ingest.token .Values.api.ingest.existingSecret }}
{{- fail "set only one of api.ingest.token and api.ingest.existingSecret" }}
{{- end }}
{{- if and .Values.api.autoscaling.enabled (gt (int .Values.api.autoscaling.minReplicas) (int .Values.api.autoscaling.maxReplicas)) }}
{{- fail "api.autoscaling.minReplicas must not exceed api.autoscaling.maxReplicas" }}
{{- end }}
{{- if and (eq .Values.database.type "cloudnativepg") .Values.api.enabled }}
{{- include "blockfeed.validateCloudNativePG" . }}
{{- end }}
{{- if and .Values.sensors.cowrie.enabled (not (and .Values.api.enabled .Values.api.ingest.enabled)) }}
{{- fail "sensors.cowrie.enabled needs this release's api-server with its ingest route (api.enabled=true, api.ingest.enabled=true): the shipper pushes Cowrie's log there with its token" }}
{{- end }}
{{- end }}

{{/* "true" when the api-server reads from the CloudNativePG Cluster's standbys (readFromStandbys; auto: instances > 1). */}}
{{- define "blockfeed.readFromStandbys" -}}
{{- $cnpg := .Values.database.cloudnativepg }}
{{- if eq .Values.database.type "cloudnativepg" }}
{{- $setting := toString $cnpg.readFromStandbys }}
{{- $instances := int (dig "instances" $cnpg.instances $cnpg.clusterSpec) }}
{{- if or (eq $setting "true") (and (eq $setting "auto") (gt $instances 1)) }}true{{ end }}
{{- end }}
{{- end }}

{{/* What CloudNativePG's admission webhook would refuse, said before anything is installed. */}}
{{- define "blockfeed.validateCloudNativePG" -}}
{{- $cnpg := .Values.database.cloudnativepg }}
{{- $name := include "blockfeed.postgresName" . }}
{{- if gt (len $name) 50 }}
{{- fail (printf "the CloudNativePG Cluster would be named %s (%d characters); CloudNativePG allows 50: set fullnameOverride or a shorter release name" $name (len $name)) }}
{{- end }}
{{- if gt (int $cnpg.minSyncReplicas) (int $cnpg.maxSyncReplicas) }}
{{- fail (printf "database.cloudnativepg.minSyncReplicas (%d) must not exceed database.cloudnativepg.maxSyncReplicas (%d)" (int $cnpg.minSyncReplicas) (int $cnpg.maxSyncReplicas)) }}
{{- end }}
{{- if ge (int $cnpg.maxSyncReplicas) (int $cnpg.instances) }}
{{- fail (printf "database.cloudnativepg.maxSyncReplicas (%d) needs more instances: a primary and at least that many standbys (database.cloudnativepg.instances >= %d)" (int $cnpg.maxSyncReplicas) (add1 (int $cnpg.maxSyncReplicas))) }}
{{- end }}
{{- if and $cnpg.imageName (not (regexMatch ":[0-9][^:/@]*(@sha256:[0-9a-f]{64})?$" $cnpg.imageName)) }}
{{- fail (printf "database.cloudnativepg.imageName %q needs a tag starting with the PostgreSQL major version (like ghcr.io/cloudnative-pg/postgresql:17.5): CloudNativePG reads the version from it" $cnpg.imageName) }}
{{- end }}
{{- end }}

{{/* The api-server's container port: its Service's target, and where a sensor's NetworkPolicy lets the shipper go. */}}
{{- define "blockfeed.apiContainerPort" -}}8080{{- end }}

{{/* tier=quota,... as BLOCKFEED_TIER_QUOTAS reads it (tiers sorted by name: stable output). */}}
{{- define "blockfeed.tierQuotas" -}}
{{- include "blockfeed.keyValueList" .Values.api.tiers }}
{{- end }}

{{- define "blockfeed.keyValueList" -}}
{{- $pairs := list }}
{{- range $k, $v := . }}
{{- $pairs = append $pairs (printf "%s=%v" $k $v) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}
