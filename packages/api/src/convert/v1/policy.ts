/**
 * The v1 policy kinds: `policy` → GlobalNetworkPolicy (named `<tier>.<name>`, types filled in as
 * the v1 client did), `profile` → Profile (tags and labels merged into labelsToApply) and `tier`
 * → Tier. Rules go through `../v1-rules.ts`.
 */
import type { GlobalNetworkPolicy, Profile, Tier } from '../../resources/index.js';
import {
  type FieldPath,
  type Obj,
  optBool,
  optNumber,
  optString,
  optStringList,
  optStringMap,
  readObj,
  reqString,
} from '../fields.js';
import { convertName, convertNameNoDots } from '../names.js';
import { convertV1Rules, convertV1Selector, newRuleNotes } from '../v1-rules.js';
import { API_V3, type Converted, renamedNote, ruleNotes } from './converted.js';
import { convertProfileName } from './readers.js';

// policy → GlobalNetworkPolicy

export function convertPolicy(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['name', 'tier', 'annotations'], false);
  const name = reqString(md, 'name', mat);
  const tierIn = optString(md, 'tier', mat) ?? '';
  const annotations = optStringMap(md, 'annotations', mat);
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, [
    'order',
    'ingress',
    'egress',
    'selector',
    'doNotTrack',
    'preDNAT',
    'types',
  ]);

  const notes = newRuleNotes();
  const ingress = convertV1Rules(spec, 'ingress', sat, notes);
  const egress = convertV1Rules(spec, 'egress', sat, notes);
  const doNotTrack = optBool(spec, 'doNotTrack', sat) ?? false;
  const preDNAT = optBool(spec, 'preDNAT', sat) ?? false;

  // The v1 client filled in empty types from the rules present: no egress rules ⇒ [Ingress]
  // (even with no ingress rules), egress only ⇒ [Egress], both ⇒ [Ingress, Egress].
  const typesIn = optStringList(spec, 'types', sat) ?? [];
  let types: ('Ingress' | 'Egress')[];
  if (typesIn.length === 0) {
    if (!egress) types = ['Ingress'];
    else if (!ingress) types = ['Egress'];
    else types = ['Ingress', 'Egress'];
  } else {
    types = typesIn.map((t, i) => {
      const l = t.toLowerCase();
      if (l === 'ingress') return 'Ingress';
      if (l === 'egress') return 'Egress';
      throw sat
        .child('types')
        .child(i)
        .error(`must be ingress or egress, got ${JSON.stringify(t)}`);
    });
  }

  const tier = convertNameNoDots(tierIn) || 'default';
  const v3Name = `${tier}.${convertNameNoDots(name)}`;
  const selector = convertV1Selector(optString(spec, 'selector', sat) ?? '', notes);
  const order = optNumber(spec, 'order', sat);

  const gnp: GlobalNetworkPolicy = {
    apiVersion: API_V3,
    kind: 'GlobalNetworkPolicy',
    metadata: {
      name: v3Name,
      labels: { 'projectcalico.org/tier': tier },
      ...(annotations && Object.keys(annotations).length ? { annotations } : {}),
    },
    spec: {
      tier,
      ...(order !== undefined ? { order } : {}),
      ...(ingress ? { ingress } : {}),
      ...(egress ? { egress } : {}),
      ...(selector ? { selector } : {}),
      types,
      ...(doNotTrack ? { doNotTrack } : {}),
      ...(preDNAT ? { preDNAT } : {}),
      // DoNotTrack and PreDNAT policy always applied to forwarded traffic in v1.
      ...(doNotTrack || preDNAT ? { applyOnForward: true } : {}),
    },
  };
  const noteLines = [
    ...renamedNote('policy name', name, convertNameNoDots(name)),
    ...(tierIn ? renamedNote('tier name', tierIn, tier) : []),
    ...ruleNotes(notes),
  ];
  return { resource: gnp, from: tierIn ? `${tierIn}/${name}` : name, notes: noteLines };
}

// profile → Profile

export function convertProfile(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['name', 'tags', 'labels'], false);
  const name = reqString(md, 'name', mat);
  const tags = optStringList(md, 'tags', mat) ?? [];
  const labels = optStringMap(md, 'labels', mat) ?? {};
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, ['ingress', 'egress']);

  const notes = newRuleNotes();
  const ingress = convertV1Rules(spec, 'ingress', sat, notes);
  const egress = convertV1Rules(spec, 'egress', sat, notes);

  // Tags and labels merge into labelsToApply: each tag becomes a label with an empty value.
  const labelsToApply: Record<string, string> = { ...labels };
  tags.forEach((t, i) => {
    if (Object.hasOwn(labelsToApply, t)) {
      const clash = Object.hasOwn(labels, t) ? `label ${t}=${JSON.stringify(labels[t])}` : 'an earlier tag';
      throw mat
        .child('tags')
        .child(i)
        .error(
          `tag ${JSON.stringify(t)} has the same name as ${clash}; change the label key before converting`,
        );
    }
    labelsToApply[t] = '';
  });

  const v3Name = convertProfileName(name);
  const profile: Profile = {
    apiVersion: API_V3,
    kind: 'Profile',
    metadata: { name: v3Name },
    spec: {
      ...(ingress ? { ingress } : {}),
      ...(egress ? { egress } : {}),
      ...(Object.keys(labelsToApply).length ? { labelsToApply } : {}),
    },
  };
  const noteLines = [...ruleNotes(notes)];
  if (tags.length) noteLines.unshift(`  tags ${tags.join(', ')} became labelsToApply with empty values`);
  const expected = name.startsWith('k8s_ns.') ? `kns.${name.slice('k8s_ns.'.length)}` : name;
  noteLines.unshift(...renamedNote('profile name', expected, v3Name));
  return { resource: profile, from: name, notes: noteLines };
}

// tier → Tier

export function convertTier(doc: Obj, at: FieldPath): Converted {
  const mat = at.child('metadata');
  const md = readObj(doc.metadata, mat, ['name'], false);
  const name = reqString(md, 'name', mat);
  const sat = at.child('spec');
  const spec = readObj(doc.spec, sat, ['order']);
  const order = optNumber(spec, 'order', sat);
  const v3Name = convertName(name);
  const tier: Tier = {
    apiVersion: API_V3,
    kind: 'Tier',
    metadata: { name: v3Name },
    spec: { ...(order !== undefined ? { order } : {}) },
  };
  return { resource: tier, from: name, notes: renamedNote('tier name', name, v3Name) };
}
