'use strict';
/**
 * Who may use the Node-RED editor that `npm start` runs. The editor deploys
 * flows, and a flow runs code with every right of the process that holds the
 * farm (its database, the printers' access codes, the service's tokens): an
 * editor anyone can reach is an open door to all of it.
 *
 * The rule: the editor listens on 127.0.0.1 unless NODE_RED_HOST says
 * otherwise, and it asks for a login (user `admin`) whenever it listens beyond
 * loopback OR the embedded service has access control on (AUTH_TOKENS or
 * tokens.json in its data dir): the editor is never the open door beside a
 * locked API. The password is NODE_RED_ADMIN_PASSWORD, or one made at random
 * on first need and kept in <user dir>/admin-password.txt (mode 0600), whose
 * path, never the password, the launcher prints.
 */
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const USER = 'admin';
const PASSWORD_FILE = 'admin-password.txt';
const MIN_PASSWORD = 12;

function isLoopback(host) {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Why the editor needs a login ('' when it does not). */
function loginReason({ host, serviceLocked }) {
  if (!isLoopback(host)) return `the editor listens on ${host}, beyond this machine`;
  if (serviceLocked) return 'the embedded service has access control on';
  return '';
}

/** The admin password and where it comes from; creates the file with a random one when there is none. */
function adminPassword(userDir, env) {
  const given = env.NODE_RED_ADMIN_PASSWORD;
  if (given !== undefined && given !== '') {
    if (given.length < MIN_PASSWORD) throw new Error(`NODE_RED_ADMIN_PASSWORD must have at least ${MIN_PASSWORD} characters`);
    return { password: given, source: 'NODE_RED_ADMIN_PASSWORD' };
  }
  const file = path.join(userDir, PASSWORD_FILE);
  let password = '';
  try {
    password = fs.readFileSync(file, 'utf8').trim();
  } catch {
    password = '';
  }
  if (password.length < MIN_PASSWORD) {
    password = crypto.randomBytes(18).toString('base64url');
    fs.writeFileSync(file, `${password}\n`, { mode: 0o600 });
  }
  // A file made by hand (or restored from a backup) may be readable by others: keep it the owner's.
  fs.chmodSync(file, 0o600);
  return { password, source: file };
}

const digest = (text) => crypto.createHash('sha256').update(String(text), 'utf8').digest();

/** Node-RED `adminAuth` settings: one user with every permission, its password compared in constant time. */
function adminAuth(password) {
  const expected = digest(password);
  const user = { username: USER, permissions: '*' };
  return {
    type: 'credentials',
    users: (username) => Promise.resolve(username === USER ? user : null),
    authenticate: (username, given) => Promise.resolve(username === USER && crypto.timingSafeEqual(digest(given), expected) ? user : null),
  };
}

module.exports = { USER, isLoopback, loginReason, adminPassword, adminAuth };
