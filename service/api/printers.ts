import type { ServiceContext } from '../context';
import {
  CreatePrinterBody,
  PrinterCreated,
  PrinterDeleted,
  PrinterDetail,
  PrinterIdParams,
  PrinterList,
  PrinterListQuery,
  PrinterUpdated,
  UpdatePrinterBody,
} from '../schemas/printers';
import { defineRoute, type AnyRoute } from './route';

export function printerRoutes({ printers }: ServiceContext): AnyRoute[] {
  return [
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
        'The printer starts as `configuring` / `testing` while its connection is tested. `serial_number` and `access_code` are required for `bambu_lab` (400 INVALID_PRINTER_CONFIG otherwise); 409 when the id is taken.',
      body: CreatePrinterBody,
      status: 201,
      response: PrinterCreated,
      errors: [400, 409],
      handler: ({ body }) => printers.create(body),
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
