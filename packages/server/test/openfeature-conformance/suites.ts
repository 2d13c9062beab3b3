import { readFileSync } from 'node:fs';
import { AstBuilder, compile, GherkinClassicTokenMatcher, Parser } from '@cucumber/gherkin';
import { IdGenerator, type PickleStep } from '@cucumber/messages';

/** The OpenFeature suites run here, as copied unchanged into `gherkin/` (see its README). */
export const FEATURE_FILES = [
  'evaluation.feature',
  'evaluation_v2.feature',
  'metadata.feature',
  'contextMerging.feature',
] as const;

export const GHERKIN_DIR = new URL('./gherkin/', import.meta.url);

/** One pickle: a scenario, or one example row of a scenario outline, ready to run. */
export interface Scenario {
  file: string;
  feature: string;
  /** The scenario's AST node id: the example rows of one outline share it. */
  outlineId: string;
  name: string;
  /** The example row's cells, comma-separated; empty for a plain scenario. */
  example: string;
  steps: readonly PickleStep[];
}

/** Parses a feature file with the official Gherkin parser and compiles its pickles. */
function loadFeature(file: string): Scenario[] {
  const newId = IdGenerator.incrementing();
  const source = readFileSync(new URL(file, GHERKIN_DIR), 'utf8');
  const document = new Parser(new AstBuilder(newId), new GherkinClassicTokenMatcher()).parse(
    source,
  );
  const feature = document.feature;
  if (!feature) throw new Error(`${file} has no Feature`);
  const exampleRows = new Map<string, string>();
  for (const child of feature.children) {
    for (const examples of child.scenario?.examples ?? []) {
      for (const row of examples.tableBody)
        exampleRows.set(row.id, row.cells.map((cell) => cell.value).join(', '));
    }
  }
  return compile(document, file, newId).map((pickle) => ({
    file,
    feature: feature.name,
    outlineId: pickle.astNodeIds[0] ?? pickle.id,
    name: pickle.name,
    example: exampleRows.get(pickle.astNodeIds[1] ?? '') ?? '',
    steps: pickle.steps,
  }));
}

/** Every scenario of {@link FEATURE_FILES}, in file order. */
export function loadScenarios(): Scenario[] {
  return FEATURE_FILES.flatMap(loadFeature);
}
