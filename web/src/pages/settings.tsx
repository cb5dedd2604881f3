// Settings groups (issue 7): general, interfaces, netboot, logging. Each group shows its
// current values and takes a JSON patch; the API's error text is shown as it comes.

import { JsonSettings } from './dhcp';

export function Settings() {
  return (
    <>
      <JsonSettings title="General" path="/settings/general" live={['settings.']} />
      <JsonSettings title="Interfaces" path="/settings/interfaces" live={['settings.']} />
      <JsonSettings title="Netboot" path="/settings/netboot" live={['settings.']} />
      <JsonSettings title="Logging" path="/settings/logging" live={['settings.', 'log.']} />
    </>
  );
}
