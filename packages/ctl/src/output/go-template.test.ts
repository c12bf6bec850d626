import { describe, expect, test } from 'vitest';
import { CtlError } from '../errors.js';
import { renderGoTemplate } from './go-template.js';

const list = [
  {
    kind: 'IPPoolList',
    apiVersion: 'projectcalico.org/v3',
    metadata: { resourceVersion: '9' },
    items: [
      {
        kind: 'IPPool',
        metadata: { name: 'a', labels: { z: '1', b: '2' } },
        spec: { cidr: '10.0.0.0/8', natOutgoing: true, allowedUses: ['Workload', 'Tunnel'] },
      },
      { kind: 'IPPool', metadata: { name: 'b' }, spec: { cidr: '10.1.0.0/16', natOutgoing: false } },
    ],
  },
];

describe('renderGoTemplate', () => {
  test.each([
    ['{{range .items}}{{.metadata.name}}{{"\\n"}}{{end}}', 'a\nb\n'],
    ['{{range .}}{{range .Items}}{{.ObjectMeta.Name}},{{end}}{{end}}', 'a,b,'],
    ['{{range .items}}{{.spec.cidr}} {{.Spec.NATOutgoing}}\n{{end}}', '10.0.0.0/8 true\n10.1.0.0/16 false\n'],
    ['{{range .items}}{{if .spec.natOutgoing}}{{.metadata.name}}{{else}}-{{end}}{{end}}', 'a-'],
    ['{{range $i, $p := .items}}{{$i}}={{$p.metadata.name}};{{end}}', '0=a;1=b;'],
    ['{{len .items}}', '2'],
    ['{{(index .items 0).metadata.name}}', 'a'],
    ['{{range .items}}{{join .spec.allowedUses "+"}}|{{end}}', 'Workload+Tunnel||'],
    ['{{range .items}}{{.metadata.labels}}{{end}}', 'map[b:2 z:1]<no value>'],
    ['{{range .items}}{{printf "%s/%v " .metadata.name .spec.natOutgoing}}{{end}}', 'a/true b/false '],
    ['{{- range .items -}}\n  {{ .metadata.name }}\n{{- end }}', 'ab'],
    ['{{range .items}}{{if eq .metadata.name "b"}}{{.spec.cidr}}{{end}}{{end}}', '10.1.0.0/16'],
    ['{{/* comment */}}x', 'x'],
    ['{{with .nothing}}y{{else}}n{{end}}', 'n'],
    ['{{.items | len}}', '2'],
  ])('%s', (tpl, want) => {
    expect(renderGoTemplate(tpl, list)).toBe(want);
  });

  test.each([
    ['{{range .items}}', 'missing {{end}}'],
    ['{{nofunc .x}}', 'function "nofunc" not defined'],
    ['{{.x', 'unclosed action'],
    ['{{end}}', 'unexpected {{end}}'],
  ])('rejects %s', (tpl, msg) => {
    expect(() => renderGoTemplate(tpl, list)).toThrow(CtlError);
    expect(() => renderGoTemplate(tpl, list)).toThrow(msg);
  });
});
