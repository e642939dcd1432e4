/**
 * The TLS context of every connection to a Bambu printer (MQTT and FTPS): one for the process, made on first
 * use. A context made per connection loads the whole root store again (about 1 ms of CPU each): 1000 printers
 * connecting at startup, and an FTPS connection per file operation, paid it over and over.
 */
import * as tls from 'node:tls';

let shared: tls.SecureContext | null = null;

/** TLS 1.2 at most: some firmware never answers a TLS 1.3 ClientHello (PROTOCOLS.md §1). */
export function printerTlsContext(): tls.SecureContext {
  shared ??= tls.createSecureContext({ maxVersion: 'TLSv1.2' });
  return shared;
}
