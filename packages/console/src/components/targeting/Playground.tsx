import { Button, TextArea, TextField } from '@radix-ui/themes';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import type { Flag, Rule, Segment } from '../../api/types';
import { Labelled } from '../Field';
import { describeRule } from './sentence';
import { useFormMutation } from '../useFormMutation';

/**
 * "What would this context get, and why" (journey 4): evaluates a context against the
 * environment's current configuration with `POST …/evaluate` and shows the variation, the reason
 * and the rule that matched.
 */
export function Playground(props: {
  org: string;
  project: string;
  flag: Flag;
  environment: string;
  rules: Rule[];
  segments: Segment[];
}) {
  const { org, project, flag, environment, rules, segments } = props;
  const [userId, setUserId] = useState('');
  const [attributes, setAttributes] = useState('{\n  "country": "DE"\n}');
  const [syntax, setSyntax] = useState<string | null>(null);

  const evaluate = useFormMutation({
    mutationFn: (context: { userId?: string; attributes?: Record<string, unknown> }) =>
      unwrap(
        api.POST('/api/v1/orgs/{org}/projects/{project}/flags/{flag}/environments/{env}/evaluate', {
          params: { path: { org, project, flag: flag.key ?? flag.id, env: environment } },
          body: { context },
        }),
      ),
  });

  function submit(event: React.SyntheticEvent) {
    event.preventDefault();
    let parsed: unknown;
    try {
      parsed = attributes.trim() ? JSON.parse(attributes) : {};
    } catch (error) {
      setSyntax(`Not JSON: ${(error as Error).message}`);
      // The last result answered other attributes: it no longer explains what is typed.
      evaluate.reset();
      return;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      setSyntax('Attributes are a JSON object: {"name": value, …}');
      evaluate.reset();
      return;
    }
    setSyntax(null);
    evaluate.mutate({
      ...(userId.trim() ? { userId: userId.trim() } : {}),
      attributes: parsed as Record<string, unknown>,
    });
  }

  const result = evaluate.data;
  const ruleIndex = result?.ruleId ? rules.findIndex((rule) => rule.id === result.ruleId) : -1;
  const rule = rules[ruleIndex];
  const served = flag.variations.find((v) => v.key === result?.variation);

  return (
    <section aria-labelledby={`playground-${environment}`}>
      <h3 id={`playground-${environment}`}>Playground</h3>
      <form onSubmit={submit} className="playground">
        <Labelled label="User id">
          {(id) => (
            <TextField.Root
              id={id}
              value={userId}
              onChange={(event) => setUserId(event.target.value)}
            />
          )}
        </Labelled>
        <Labelled label="Attributes (JSON)" error={syntax}>
          {(id, describedBy) => (
            <TextArea
              id={id}
              rows={4}
              aria-describedby={describedBy}
              aria-invalid={syntax !== null}
              value={attributes}
              onChange={(event) => setAttributes(event.target.value)}
            />
          )}
        </Labelled>
        <Button type="submit" disabled={evaluate.isPending}>
          Evaluate in {environment}
        </Button>
      </form>
      {evaluate.error && (
        <p role="alert" className="field-error">
          {evaluate.error.message}
        </p>
      )}
      {result && (
        <dl className="explanation" aria-label="Evaluation result">
          <dt>Variation</dt>
          <dd>
            {served?.name && served.name !== served.key ? `${served.name} ` : ''}
            <code>{result.variation ?? '—'}</code>
          </dd>
          <dt>Value</dt>
          <dd>
            <code>{result.value === undefined ? '—' : JSON.stringify(result.value)}</code>
          </dd>
          <dt>Reason</dt>
          <dd>{result.reason}</dd>
          <dt>Matching rule</dt>
          <dd>
            {rule
              ? `Rule ${ruleIndex + 1}${rule.description ? `: ${rule.description}` : ''} (${describeRule(rule, segments)})`
              : 'none'}
          </dd>
          {result.prerequisiteKey && (
            <>
              <dt>Failed prerequisite</dt>
              <dd>{result.prerequisiteKey}</dd>
            </>
          )}
        </dl>
      )}
    </section>
  );
}
