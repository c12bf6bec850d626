{{/* An image reference: <registry><repository>/<name>:<tag>. */}}
{{- define "calico-ts.image" -}}
{{- $i := .root.Values.images -}}
{{- printf "%s%s/%s:%s" $i.registry $i.repository .name $i.tag -}}
{{- end -}}

{{/* "true" when the datastore is etcd. */}}
{{- define "calico-ts.etcd" -}}
{{- if eq .Values.datastore "etcd" }}true{{ end -}}
{{- end -}}

{{/* The networking backend calico-node runs: none in policy-only mode. */}}
{{- define "calico-ts.backend" -}}
{{- if .Values.policyOnly.enabled }}none{{ else }}{{ .Values.networkingBackend }}{{ end -}}
{{- end -}}

{{/* The pool's IPIP and VXLAN modes from ipv4Pool.encapsulation and encapsulationMode. */}}
{{- define "calico-ts.ipipMode" -}}
{{- if eq .Values.ipv4Pool.encapsulation "IPIP" }}{{ .Values.ipv4Pool.encapsulationMode }}{{ else }}Never{{ end -}}
{{- end -}}
{{- define "calico-ts.vxlanMode" -}}
{{- if eq .Values.ipv4Pool.encapsulation "VXLAN" }}{{ .Values.ipv4Pool.encapsulationMode }}{{ else }}Never{{ end -}}
{{- end -}}

{{/* Whether etcd TLS material was given. */}}
{{- define "calico-ts.etcdTLS" -}}
{{- $t := .Values.etcd.tls -}}
{{- if or $t.ca $t.cert $t.key }}true{{ end -}}
{{- end -}}

{{- define "calico-ts.enabledControllers" -}}
{{- if .Values.kubeControllers.enabledControllers -}}
{{ .Values.kubeControllers.enabledControllers }}
{{- else if include "calico-ts.etcd" . -}}
policy,namespace,serviceaccount,workloadendpoint,node
{{- else -}}
node
{{- end -}}
{{- end -}}

{{/* The env entries that point a program at etcd, from the calico-config ConfigMap. */}}
{{- define "calico-ts.etcdEnv" -}}
- name: ETCD_ENDPOINTS
  valueFrom:
    configMapKeyRef:
      name: calico-config
      key: etcd_endpoints
- name: ETCD_CA_CERT_FILE
  valueFrom:
    configMapKeyRef:
      name: calico-config
      key: etcd_ca
- name: ETCD_KEY_FILE
  valueFrom:
    configMapKeyRef:
      name: calico-config
      key: etcd_key
- name: ETCD_CERT_FILE
  valueFrom:
    configMapKeyRef:
      name: calico-config
      key: etcd_cert
{{- end -}}

{{/* The install-cni container (an init container with sleep "false", a sidecar with "true"). */}}
{{- define "calico-ts.installCni" -}}
{{- $root := .root -}}
- name: {{ .name }}
  image: {{ include "calico-ts.image" (dict "root" $root "name" $root.Values.images.cni) }}
  imagePullPolicy: {{ $root.Values.images.pullPolicy }}
  command: ["/opt/cni/bin/install"]
  envFrom:
    - configMapRef:
        name: kubernetes-services-endpoint
        optional: true
  env:
    - name: CNI_CONF_NAME
      value: "10-calico.conflist"
    - name: CNI_NETWORK_CONFIG
      valueFrom:
        configMapKeyRef:
          name: calico-config
          key: cni_network_config
{{- if include "calico-ts.etcd" $root }}
    - name: ETCD_ENDPOINTS
      valueFrom:
        configMapKeyRef:
          name: calico-config
          key: etcd_endpoints
{{- else }}
    - name: DATASTORE_TYPE
      value: "kubernetes"
{{- end }}
    - name: KUBERNETES_NODE_NAME
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    - name: CNI_MTU
      valueFrom:
        configMapKeyRef:
          name: calico-config
          key: veth_mtu
    - name: SLEEP
      value: {{ .sleep | quote }}
  volumeMounts:
    - mountPath: /host/opt/cni/bin
      name: cni-bin-dir
    - mountPath: /host/etc/cni/net.d
      name: cni-net-dir
{{- if include "calico-ts.etcd" $root }}
    - mountPath: /calico-secrets
      name: etcd-certs
{{- end }}
  securityContext:
    privileged: true
{{- end -}}
