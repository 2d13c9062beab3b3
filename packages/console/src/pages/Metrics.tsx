import { TextArea } from '@radix-ui/themes';
import { useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import {
  createMetric,
  deleteMetric,
  DIRECTION_WORDS,
  KIND_WORDS,
  useMetrics,
} from '../api/experiments';
import { queryKeys } from '../api/query-keys';
import type { Direction, Metric, MetricKind } from '../api/types';
import { ActionsTableHead } from '../components/ActionsTableHead';
import { ConfirmButton } from '../components/ConfirmButton';
import { Field, Labelled } from '../components/Field';
import { FormDialog } from '../components/FormDialog';
import { keyFromName } from '../components/key-from-name';
import { useFormMutation } from '../components/useFormMutation';

/** The default window after a user's first exposure in which their events count (hours). */
const DEFAULT_WINDOW_HOURS = '168';

/** A window in words: "168 hours (7 days)". */
function windowWords(hours: number): string {
  const days = hours / 24;
  const unit = hours === 1 ? 'hour' : 'hours';
  return Number.isInteger(days) && days >= 1
    ? `${hours} ${unit} (${days} ${days === 1 ? 'day' : 'days'})`
    : `${hours} ${unit}`;
}

/**
 * A project's metric catalogue (experiments.md §1): what each metric reads and how, "New
 * metric", and Delete, which the API refuses while an experiment or a release plan uses the
 * metric (its message is shown).
 */
export function Metrics({ org, project }: { org: string; project: string }) {
  const metrics = useMetrics(org, project);
  const items = metrics.data?.items ?? [];
  return (
    <>
      <div className="page-heading">
        <h1>Metrics</h1>
        {metrics.data?._actions['create']?.allowed && (
          <NewMetricDialog org={org} project={project} />
        )}
      </div>
      <p className="hint">
        A metric reads the custom events (<code>track()</code>) with its event key, from the users
        an experiment or a release plan exposed to a flag.
      </p>
      {metrics.error && <p role="alert">{metrics.error.message}</p>}
      {metrics.isPending && <p role="status">Loading…</p>}
      <table>
        <caption className="visually-hidden">Metrics of the project</caption>
        <ActionsTableHead
          columns={['Metric', 'Key', 'Event key', 'Kind', 'Better when', 'Window']}
        />
        <tbody>
          {items.map((metric) => (
            <MetricRow
              key={metric.id}
              org={org}
              project={project}
              metric={metric}
              canDelete={metrics.data?._actions['create']?.allowed ?? false}
            />
          ))}
        </tbody>
      </table>
      {metrics.isSuccess && items.length === 0 && <p>No metric yet.</p>}
    </>
  );
}

/**
 * One metric's row. List items carry no `_actions`: whoever may create metrics (Member) may
 * delete them too, so the list's own `create` says whether Delete is offered.
 */
function MetricRow(props: { org: string; project: string; metric: Metric; canDelete: boolean }) {
  const { org, project, metric } = props;
  const queryClient = useQueryClient();
  const remove = useFormMutation({
    mutationFn: () => deleteMetric(org, project, metric.key),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.metrics(org, project) }),
  });
  return (
    <tr>
      <th scope="row">
        {metric.name}
        {metric.description && <p className="hint">{metric.description}</p>}
      </th>
      <td>
        <code>{metric.key}</code>
      </td>
      <td>
        <code>{metric.eventKey}</code>
      </td>
      <td>
        {KIND_WORDS[metric.kind]}
        {metric.valueProperty && (
          <>
            {' '}
            of <code>{metric.valueProperty}</code>
          </>
        )}
      </td>
      <td>{DIRECTION_WORDS[metric.direction]}</td>
      <td>{windowWords(metric.windowHours)}</td>
      <td>
        {props.canDelete && (
          <ConfirmButton
            label="Delete"
            ariaLabel={`Delete ${metric.name}`}
            title={`Delete ${metric.name}?`}
            description="A metric that an experiment or a release plan uses is not deleted: the API says which."
            confirm={`Delete ${metric.name}`}
            busy={remove.isPending}
            onConfirm={() => remove.mutate()}
          />
        )}
        {remove.error && (
          <p role="alert" className="field-error">
            Not deleted: {remove.error.message}
          </p>
        )}
      </td>
    </tr>
  );
}

/** "New metric": key, name, description, event key, kind (with its property), direction, window. */
function NewMetricDialog({ org, project }: { org: string; project: string }) {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [key, setKey] = useState('');
  const [keyTouched, setKeyTouched] = useState(false);
  const [description, setDescription] = useState('');
  const [eventKey, setEventKey] = useState('');
  const [kind, setKind] = useState<MetricKind>('conversion');
  const [valueProperty, setValueProperty] = useState('');
  const [direction, setDirection] = useState<Direction>('higher_is_better');
  const [windowHours, setWindowHours] = useState(DEFAULT_WINDOW_HOURS);
  const withValue = kind === 'sum' || kind === 'mean';
  const create = useFormMutation({
    mutationFn: () =>
      createMetric(org, project, {
        key,
        name,
        ...(description ? { description } : {}),
        eventKey,
        kind,
        ...(withValue ? { valueProperty } : {}),
        direction,
        windowHours: Number(windowHours),
      }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.metrics(org, project) }),
  });
  return (
    <FormDialog
      label="New metric"
      title="New metric"
      description="What an experiment measures: the custom events of one key, per exposed user."
      form={create}
      confirmLabel="Create metric"
      onOpen={() => {
        setName('');
        setKey('');
        setKeyTouched(false);
        setDescription('');
        setEventKey('');
        setKind('conversion');
        setValueProperty('');
        setDirection('higher_is_better');
        setWindowHours(DEFAULT_WINDOW_HOURS);
      }}
    >
      <Field
        label="Name"
        value={name}
        onChange={(event) => {
          setName(event.target.value);
          if (!keyTouched) setKey(keyFromName(event.target.value));
        }}
        error={create.problemAt('name')}
      />
      <Field
        label="Key"
        value={key}
        onChange={(event) => {
          setKey(event.target.value);
          setKeyTouched(true);
        }}
        error={create.problemAt('key')}
      />
      <Labelled label="Description" error={create.problemAt('description')}>
        {(id, describedBy) => (
          <TextArea
            id={id}
            aria-describedby={describedBy}
            value={description}
            onChange={(event) => setDescription(event.target.value)}
          />
        )}
      </Labelled>
      <Field
        label="Event key"
        value={eventKey}
        onChange={(event) => setEventKey(event.target.value)}
        error={create.problemAt('eventKey')}
        hint="The key the SDKs' track() sends, e.g. checkout-completed."
      />
      <Labelled label="Kind" error={create.problemAt('kind')}>
        {(id, describedBy) => (
          <select
            id={id}
            aria-describedby={describedBy}
            value={kind}
            onChange={(event) => setKind(event.target.value as MetricKind)}
          >
            {(Object.keys(KIND_WORDS) as MetricKind[]).map((value) => (
              <option key={value} value={value}>
                {KIND_WORDS[value]}
              </option>
            ))}
          </select>
        )}
      </Labelled>
      {withValue && (
        <Field
          label="Value property"
          value={valueProperty}
          onChange={(event) => setValueProperty(event.target.value)}
          error={create.problemAt('valueProperty')}
          hint="The member of the event's metadata that holds the number, e.g. amount."
        />
      )}
      <Labelled label="Better when the value is" error={create.problemAt('direction')}>
        {(id, describedBy) => (
          <select
            id={id}
            aria-describedby={describedBy}
            value={direction}
            onChange={(event) => setDirection(event.target.value as Direction)}
          >
            <option value="higher_is_better">higher (conversions, revenue)</option>
            <option value="lower_is_better">lower (errors, latency)</option>
          </select>
        )}
      </Labelled>
      <Field
        label="Window (hours)"
        type="number"
        min={1}
        value={windowHours}
        onChange={(event) => setWindowHours(event.target.value)}
        error={create.problemAt('windowHours')}
        hint="Events count when they come within this many hours of the user's first exposure."
      />
    </FormDialog>
  );
}
