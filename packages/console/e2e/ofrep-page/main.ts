/**
 * A page that knows nothing of Vexil but the OFREP base address and a client key (from its query
 * string): the stock OpenFeature web and React SDKs with the stock OFREP web provider, polling
 * off, so the only way it hears of a change is the event stream the bulk answer names.
 */
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
import { OpenFeature, OpenFeatureProvider, useBooleanFlagValue } from '@openfeature/react-sdk';
import { createElement } from 'react';
import { createRoot } from 'react-dom/client';

const params = new URLSearchParams(location.search);
OpenFeature.setProvider(
  new OFREPWebProvider({
    baseUrl: params.get('vexil') ?? '',
    headers: [['Authorization', `Bearer ${params.get('key') ?? ''}`]],
    pollInterval: 0,
  }),
);
void OpenFeature.setContext({ targetingKey: 'anna' });

function Headline() {
  const on = useBooleanFlagValue('headline', false);
  return createElement('p', { 'data-testid': 'headline' }, on ? 'on' : 'off');
}

const root = document.getElementById('root');
if (root)
  createRoot(root).render(createElement(OpenFeatureProvider, null, createElement(Headline)));
