/**
 * Printer models as files and printers name them. A 3MF says "Bambu Lab X1
 * Carbon" or printer_model_id "BL-P001", PrusaSlicer G-code "MK4IS" or
 * "COREONE", a printer "X1C" or "Core One": they all reduce to one key, so that
 * compatibility is decided from what the file and the printer report, never
 * from file names.
 */
import { PRINTER_FAMILIES, type ModelSpec } from './printer-families';

/** Spellings that differ from the key they mean (keys are lower case, without spaces or punctuation). */
const ALIASES: Record<string, string> = {
  x1carbon: 'x1c',
  blp001: 'x1c',
  blp002: 'x1',
  blp003: 'x1e',
  c11: 'p1p',
  c12: 'p1s',
  c13: 'x1e',
  n1: 'a1mini',
  n2s: 'a1',
  o1d: 'h2d',
  // PrusaSlicer's input-shaper variants are the same machines.
  mk4is: 'mk4',
  mk39is: 'mk39',
  mk35is: 'mk35',
  miniis: 'mini',
  xlis: 'xl',
  xl2is: 'xl',
  xl5is: 'xl',
  // PrusaSlicer's MK3S profiles carry the keyword PRINTER_MODEL_MK3.
  mk3: 'mk3s',
};

/** The key a model name reduces to ("Bambu Lab X1 Carbon" -> "x1c", "Original Prusa MK4S" -> "mk4s"); null for nothing. */
export function modelKey(name: string | null | undefined): string | null {
  if (!name) return null;
  const key = name
    .toLowerCase()
    .replace(/bambu\s*lab|original|prusa(?!\s*$)/g, '')
    .replace(/[^a-z0-9]/g, '');
  if (!key) return null;
  return ALIASES[key] ?? key;
}

/** A model as people say it: "Bambu Lab A1" -> "A1", "Original Prusa MK4S" -> "MK4S". */
export function shortModel(name: string): string {
  return name.replace(/^\s*(bambu\s*lab|original\s+prusa|prusa)\s+/i, '').trim() || name;
}

export function sameModel(a: string | null | undefined, b: string | null | undefined): boolean {
  const ka = modelKey(a);
  return ka !== null && ka === modelKey(b);
}

/** The build volume of a model, when the family tables know it. */
export function modelSpec(name: string | null | undefined): ModelSpec | null {
  const key = modelKey(name);
  if (!key) return null;
  for (const family of Object.values(PRINTER_FAMILIES)) {
    const hit = family.models.find((m) => m.key === key);
    if (hit) return hit;
  }
  return null;
}

/** Every known spelling, longest first, so that "MK4S" wins over "MK4" and "A1 mini" over "A1". */
const SPELLINGS: { re: RegExp; key: string }[] = Object.values(PRINTER_FAMILIES)
  .flatMap((f) => f.models.flatMap((m) => m.names.map((n) => ({ name: n, key: m.key }))))
  .sort((a, b) => b.name.length - a.name.length)
  .map(({ name, key }) => ({ re: new RegExp(`(^|[^A-Za-z0-9.])${name.replace(/[.]/g, '\\.').replace(/\s+/g, '\\s*')}($|[^A-Za-z0-9])`, 'i'), key }));

/**
 * The model a free-text profile name mentions ("Original Prusa MK4S 0.4 nozzle" -> "MK4S"), or null.
 * Only known model names count: a name like "Farm printer 3" names nothing.
 */
export function modelInText(text: string | null | undefined): string | null {
  if (!text) return null;
  const bounded = text.slice(0, 500);
  for (const s of SPELLINGS) if (s.re.test(bounded)) return modelSpec(s.key)?.label ?? s.key;
  return null;
}

/**
 * A configured model in free text ("Voron 2.4 350") against a file's slicer model or printer profile
 * ("Voron 2.4 350", "Voron_v2_350_afterburner"): the same key, or one key containing the other when the
 * shorter one is specific enough (5 characters or more), so that a profile with a suffix still matches.
 */
export function looselySameModel(fileModel: string | null | undefined, configured: string | null | undefined): boolean {
  const a = modelKey(fileModel);
  const b = modelKey(configured);
  if (a === null || b === null) return false;
  if (a === b) return true;
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  return short.length >= 5 && long.includes(short);
}
