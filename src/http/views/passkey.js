// The passkey pages' one script: it asks this server for a ceremony's
// options, hands them to navigator.credentials, and sends the answer back.
'use strict';
(() => {
  const base = document.currentScript.src;
  const status = document.getElementById('status');

  const toBytes = (text) => {
    const padded = text.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(text.length / 4) * 4, '=');
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
  };
  const toText = (buffer) =>
    btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

  async function call(path, body, bearer) {
    const headers = { 'Content-Type': 'application/json' };
    if (bearer) headers.Authorization = 'Bearer ' + bearer;
    const response = await fetch(new URL(path, base), { method: 'POST', headers, body: JSON.stringify(body) });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(answer.message || response.statusText);
    return answer;
  }

  const fail = (error) => { status.textContent = status.dataset.failed + ' ' + error.message; };

  function signedIn(answer) {
    if (answer.location) {
      window.location.assign(answer.location);
      return;
    }
    document.getElementById('key').textContent = answer.key;
    document.getElementById('done').hidden = false;
  }

  const carried = (element) => ({ next: element.dataset.next, invite: element.dataset.invite });

  const form = document.getElementById('passkey-register');
  if (form) {
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      status.textContent = '';
      try {
        const begun = await call('register/options', { device: form.elements.device.value, ...carried(form) });
        const options = begun.publicKey;
        options.challenge = toBytes(options.challenge);
        options.user.id = toBytes(options.user.id);
        (options.excludeCredentials || []).forEach((c) => { c.id = toBytes(c.id); });
        const made = await navigator.credentials.create({ publicKey: options });
        const credential = {
          id: made.id,
          rawId: toText(made.rawId),
          type: made.type,
          extensions: made.getClientExtensionResults(),
          response: {
            attestationObject: toText(made.response.attestationObject),
            clientDataJSON: toText(made.response.clientDataJSON),
          },
        };
        // A signed-in person adding a passkey brings their token in the
        // fragment, which browsers never send to a server.
        const bearer = new URLSearchParams(window.location.hash.slice(1)).get('token');
        const body = { ceremony: begun.ceremony, credential, db: form.dataset.db };
        signedIn(await call('register/finish', body, bearer));
      } catch (error) {
        fail(error);
      }
    });
  }

  const button = document.getElementById('passkey-sign-in');
  if (button) {
    button.addEventListener('click', async () => {
      status.textContent = '';
      try {
        const begun = await call('options', carried(button));
        const options = begun.publicKey;
        options.challenge = toBytes(options.challenge);
        (options.allowCredentials || []).forEach((c) => { c.id = toBytes(c.id); });
        const got = await navigator.credentials.get({ publicKey: options });
        const credential = {
          id: got.id,
          rawId: toText(got.rawId),
          type: got.type,
          extensions: got.getClientExtensionResults(),
          response: {
            authenticatorData: toText(got.response.authenticatorData),
            clientDataJSON: toText(got.response.clientDataJSON),
            signature: toText(got.response.signature),
            userHandle: got.response.userHandle ? toText(got.response.userHandle) : null,
          },
        };
        signedIn(await call('finish', { ceremony: begun.ceremony, credential }));
      } catch (error) {
        fail(error);
      }
    });
  }
})();
