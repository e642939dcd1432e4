/** What a printer can do, by type and model, until its driver reports otherwise. */
export interface Capabilities {
  has_camera: boolean;
  has_ams: boolean;
  supports_remote_control: boolean;
}

export function capabilitiesOf(type: string, model: string | null): Capabilities {
  const m = (model ?? '').toLowerCase();
  if (type === 'bambu_lab') {
    // Every Bambu model has a camera; the A1 family takes the AMS lite, the others the AMS.
    return { has_camera: true, has_ams: true, supports_remote_control: true };
  }
  // Klipper: one extruder as far as the farm is concerned; its webcams are Moonraker's (/server/webcams/list), not known from the model.
  if (type === 'klipper') return { has_camera: false, has_ams: false, supports_remote_control: true };
  // Prusa: the Core One and MK4S ship with (or take) the Prusa camera through Prusa Connect, not PrusaLink.
  return { has_camera: /core\s*one|xl/.test(m), has_ams: /mmu|xl/.test(m), supports_remote_control: true };
}
