import { z } from 'zod';
import type { ServiceContext } from '../context';
import { CreateFromDiscoveryBody } from '../schemas/discovery';
import {
  ConnectionTestResult,
  CreatePrinterBody,
  PrinterCommandResult,
  PrinterCreated,
  PrinterDeleted,
  PrinterDetail,
  PrinterIdParams,
  PrinterList,
  PrinterListQuery,
  PrinterUpdated,
  UpdatePrinterBody,
} from '../schemas/printers';
import { defineRoute, type AnyRoute } from '../http/route';

export function printerRoutes({ printers, fleet, discovery }: ServiceContext): AnyRoute[] {
  const control = (action: 'pause' | 'resume' | 'stop', summary: string) =>
    defineRoute({
      method: 'post',
      path: `/printers/{printer_id}/${action}`,
      tag: 'Printers',
      summary,
      description: 'Waits for the printer to acknowledge. 502 PRINTER_OFFLINE when it cannot be reached or does not answer, 409 PRINTER_BUSY when it refuses.',
      params: PrinterIdParams,
      response: PrinterCommandResult,
      errors: [409, 502],
      async handler({ params }) {
        await printers.require(params.printer_id);
        await fleet[action](params.printer_id);
        return { id: params.printer_id, action, success: true, message: `Printer acknowledged ${action}`, requested_at: new Date().toISOString() };
      },
    });
  return [
    control('pause', 'Pause the current print'),
    control('resume', 'Resume a paused print'),
    control('stop', 'Stop (cancel) the current print'),
    defineRoute({
      method: 'post',
      path: '/printers/{printer_id}/test-connection',
      tag: 'Printers',
      summary: 'Reconnect and test the connection now',
      description: 'Answers when the printer answered or the connection test gave up; `success` says which, `message` why not.',
      params: PrinterIdParams,
      response: ConnectionTestResult,
      async handler({ params }) {
        await printers.require(params.printer_id);
        const result = await fleet.testConnection(params.printer_id);
        return { id: params.printer_id, success: result.ok, status: result.status, connection_status: result.connection_status, message: result.message ?? 'connected', tested_at: new Date().toISOString() };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/printers',
      tag: 'Printers',
      summary: 'List printers',
      description: 'Access codes are never part of the list; see the printer detail.',
      query: PrinterListQuery,
      response: PrinterList,
      handler: ({ query }) => printers.list(query),
    }),
    defineRoute({
      method: 'post',
      path: '/printers',
      tag: 'Printers',
      summary: 'Add a printer',
      description:
        'The printer starts as `configuring` / `testing` while its connection is tested. `serial_number` and `access_code` are required for `bambu_lab` (400 INVALID_PRINTER_CONFIG otherwise). A `klipper` printer needs `ip_address`; `http_port` is Moonraker\'s port (default 7125) and `access_code`, when given, its API key (X-Api-Key); MQTT/FTPS ports and `auth_method` do not apply to it (400). 409 when the id is taken. ' +
        'A printer of GET /api/v1/discovery is added with `{discovered, access_code, name?}`: type, model, IP address, serial number and ports come from its discovery entry (404 DISCOVERED_PRINTER_NOT_FOUND when there is none).',
      // The full body last: a body that fits neither is told the problems of the full body.
      body: z.union([CreateFromDiscoveryBody, CreatePrinterBody]),
      status: 201,
      response: PrinterCreated,
      errors: [400, 404, 409],
      handler: ({ body }) => printers.create('discovered' in body ? discovery.fromDiscovery(body) : body),
    }),
    defineRoute({
      method: 'get',
      path: '/printers/{printer_id}',
      tag: 'Printers',
      summary: 'Printer detail (with access code, statistics, capabilities)',
      params: PrinterIdParams,
      response: PrinterDetail,
      handler: ({ params }) => printers.detail(params.printer_id),
    }),
    defineRoute({
      method: 'put',
      path: '/printers/{printer_id}',
      tag: 'Printers',
      summary: 'Change a printer',
      params: PrinterIdParams,
      body: UpdatePrinterBody,
      response: PrinterUpdated,
      handler: ({ params, body }) => printers.update(params.printer_id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/printers/{printer_id}',
      tag: 'Printers',
      summary: 'Remove a printer',
      description: 'Its job history is kept (with the printer name).',
      params: PrinterIdParams,
      response: PrinterDeleted,
      handler: ({ params }) => printers.remove(params.printer_id),
    }),
  ];
}
