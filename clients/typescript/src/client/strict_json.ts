/** JSON read strictly, as the Python side reads it (`object_pairs_hook` refusing a repeated key): a document in
 * which an object names the same key twice is refused, since a reader that keeps the first value and one that
 * keeps the last would act on different documents. Syntax is JSON.parse's; the repeated-key check walks the
 * syntax tree of @humanwhocodes/momoa (strict JSON mode), comparing decoded key names. */
import { type AnyNode, parse } from "@humanwhocodes/momoa";

export class DuplicateKey extends SyntaxError {
  override name = "DuplicateKey";
}

/** The first repeated key of any object in the tree, with its path, or null. */
function firstDuplicate(node: AnyNode, path: string): string | null {
  if (node.type === "Document") return firstDuplicate(node.body, path);
  if (node.type === "Array") {
    for (const [i, element] of node.elements.entries()) {
      const found = firstDuplicate(element.value, `${path}[${i}]`);
      if (found !== null) return found;
    }
    return null;
  }
  if (node.type !== "Object") return null;
  const seen = new Set<string>();
  for (const member of node.members) {
    const key = member.name.type === "String" ? member.name.value : member.name.name;
    if (seen.has(key)) return `${path}.${key}`;
    seen.add(key);
    const found = firstDuplicate(member.value, `${path}.${key}`);
    if (found !== null) return found;
  }
  return null;
}

/** JSON.parse, refusing a repeated object key anywhere (throws DuplicateKey; a syntax error as JSON.parse). */
export function parseStrictJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  const duplicate = firstDuplicate(parse(text, { mode: "json" }), "$");
  if (duplicate !== null) throw new DuplicateKey(`duplicate key ${duplicate}`);
  return value;
}
