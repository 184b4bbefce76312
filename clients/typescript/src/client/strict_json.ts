/** JSON read strictly, as the Python side reads it (`json.loads` with `object_pairs_hook` refusing a repeated key):
 * - a document in which an object names the same key twice is refused, since a reader that keeps the first value
 *   and one that keeps the last would act on different documents;
 * - an integer literal is read exactly: one outside Number.MIN_SAFE_INTEGER..MAX_SAFE_INTEGER becomes a bigint
 *   (JSON.parse would round it to the nearest binary64, silently), as Python reads every integer literal as an
 *   exact int. A number with a fraction or an exponent is a float on both sides, read as JSON.parse reads it.
 * Syntax is JSON.parse's; both checks walk the syntax tree of @humanwhocodes/momoa (strict JSON mode), comparing
 * decoded key names and reading a big integer from its own source text. */
import { type AnyNode, parse } from "@humanwhocodes/momoa";

export class DuplicateKey extends SyntaxError {
  override name = "DuplicateKey";
}

const INTEGER_LITERAL = /^-?(0|[1-9][0-9]*)$/;

type Step = string | number;

interface Walk {
  text: string;
  /** Where each big integer is (keys and indices from the root) and its exact value. */
  big: { at: Step[]; value: bigint }[];
}

function pathText(at: Step[]): string {
  return "$" + at.map((s) => (typeof s === "number" ? `[${s}]` : `.${s}`)).join("");
}

/** The first repeated key of any object in the tree, with its path, or null; records the big integers. */
function walk(node: AnyNode, at: Step[], w: Walk): string | null {
  if (node.type === "Document") return walk(node.body, at, w);
  if (node.type === "Number") {
    if (!Number.isSafeInteger(node.value)) {
      const source = w.text.slice(node.loc.start.offset, node.loc.end.offset);
      if (INTEGER_LITERAL.test(source)) w.big.push({ at, value: BigInt(source) });
    }
    return null;
  }
  if (node.type === "Array") {
    for (const [i, element] of node.elements.entries()) {
      const found = walk(element.value, [...at, i], w);
      if (found !== null) return found;
    }
    return null;
  }
  if (node.type !== "Object") return null;
  const seen = new Set<string>();
  for (const member of node.members) {
    const key = member.name.type === "String" ? member.name.value : member.name.name;
    if (seen.has(key)) return `${pathText(at)}.${key}`;
    seen.add(key);
    const found = walk(member.value, [...at, key], w);
    if (found !== null) return found;
  }
  return null;
}

export interface StrictJson {
  value: unknown;
  /** The paths (`$.a.b[0]`) of the integers read as bigint because they lie outside the safe range. */
  bigIntegers: string[];
}

/** The document and where its big integers are. Throws DuplicateKey on a repeated key, and JSON.parse's
 * SyntaxError on anything that is not JSON. */
export function readStrictJson(text: string): StrictJson {
  let value: unknown = JSON.parse(text);
  const w: Walk = { text, big: [] };
  const duplicate = walk(parse(text, { mode: "json" }), [], w);
  if (duplicate !== null) throw new DuplicateKey(`duplicate key ${duplicate}`);
  // JSON.parse built the value; each big integer replaces its rounded number (no key repeats, so a path names
  // exactly one place; the containers are JSON.parse's own objects and arrays, `__proto__` an own key of them)
  for (const { at, value: exact } of w.big) {
    if (at.length === 0) {
      value = exact;
      continue;
    }
    let container = value as Record<Step, unknown>;
    for (const step of at.slice(0, -1)) container = container[step] as Record<Step, unknown>;
    Object.defineProperty(container, at[at.length - 1]!, { value: exact, writable: true, enumerable: true, configurable: true });
  }
  return { value, bigIntegers: w.big.map((b) => pathText(b.at)) };
}

/** JSON.parse, refusing a repeated object key anywhere (throws DuplicateKey; a syntax error as JSON.parse), with
 * an integer beyond the safe range read exactly as a bigint. */
export function parseStrictJson(text: string): unknown {
  return readStrictJson(text).value;
}
