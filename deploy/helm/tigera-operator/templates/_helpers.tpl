{{/* Upstream's operator and ours only act from the tigera-operator namespace. */}}
{{- define "tigera-operator.namespace" -}}
{{- if ne .Release.Namespace "tigera-operator" -}}
{{- fail (printf "install into the tigera-operator namespace (--namespace tigera-operator --create-namespace), not %q: the operator keeps its CA and pull secrets there" .Release.Namespace) -}}
{{- end -}}
tigera-operator
{{- end -}}

{{/* Helm's labels and additionalLabels, on every object the chart makes. */}}
{{- define "tigera-operator.labels" -}}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The operator image: [<registry>/]<image>:<version>. */}}
{{- define "tigera-operator.image" -}}
{{- $o := .Values.tigeraOperator -}}
{{- if $o.registry -}}
{{- printf "%s/%s:%s" (trimSuffix "/" $o.registry) $o.image $o.version -}}
{{- else -}}
{{- printf "%s:%s" $o.image $o.version -}}
{{- end -}}
{{- end -}}

{{/* The pull secrets the chart creates (imagePullSecrets' names), as LocalObjectReferences. */}}
{{- define "tigera-operator.chartPullSecrets" -}}
{{- range $name, $_ := .Values.imagePullSecrets }}
- name: {{ $name }}
{{- end }}
{{- end -}}

{{/*
The Installation's spec: installation without `enabled`; imagePullSecrets with the chart's own
added (left out when there are none); custom-resources.yaml's pool when no pool is given and the
CNI is Calico.
*/}}
{{- define "tigera-operator.installationSpec" -}}
{{- $spec := omit (deepCopy .Values.installation) "enabled" -}}
{{- $secrets := concat (default list $spec.imagePullSecrets) (include "tigera-operator.chartPullSecrets" . | fromYamlArray) -}}
{{- if $secrets -}}
{{- $_ := set $spec "imagePullSecrets" $secrets -}}
{{- else -}}
{{- $_ := unset $spec "imagePullSecrets" -}}
{{- end -}}
{{- if not $spec.kubernetesProvider -}}
{{- $_ := unset $spec "kubernetesProvider" -}}
{{- end -}}
{{- $cni := default dict $spec.cni -}}
{{- $calicoCni := or (eq (toString $cni.type) "Calico") (and (not $cni.type) (not $spec.kubernetesProvider)) -}}
{{- $network := default dict $spec.calicoNetwork -}}
{{- if and $calicoCni (not (hasKey $network "ipPools")) -}}
{{- $pool := dict "name" "default-ipv4-ippool" "blockSize" 26 "cidr" "192.168.0.0/16" "encapsulation" "VXLANCrossSubnet" "natOutgoing" "Enabled" "nodeSelector" "all()" -}}
{{- $_ := set $network "ipPools" (list $pool) -}}
{{- $_ := set $spec "calicoNetwork" $network -}}
{{- end -}}
{{- toYaml $spec -}}
{{- end -}}
