/**
 * The model pages of the five platforms, as they serve them (trimmed to what the import reads), and
 * for each the URLs a user may paste and what an import must read from its page: the data of
 * test/api/ideas-import.test.ts, served by the page server of ideas-fixtures.ts.
 */

export const NO_FILES = { file_count: null, formats: [], files: [] };

const ld = (data: unknown) => `<script type="application/ld+json">${JSON.stringify(data)}</script>`;

/** Model pages as the five platforms serve them (trimmed to what the import reads), by host + path. */
export const PAGES: Record<string, string> = {
  'makerworld.com/en/models/123456': `<!DOCTYPE html><html lang="en"><head>
    <title>Flexi Rex - Print in place | MakerWorld</title>
    <meta property="og:type" content="website">
    <meta property="og:title" content="Flexi Rex - Print in place">
    <meta property="og:description" content="An articulated T-Rex, printed in one piece. No supports needed.">
    <meta property="og:image" content="https://makerworld.bblmw.com/makerworld/model/flexirex/cover.jpg">
    <meta name="author" content="DinoMaker">
    </head><body><div id="__next"></div></body></html>`,
  'www.printables.com/model/234567-articulated-dragon': `<!doctype html><html><head>
    <title>Articulated Dragon by Jane | Download free STL model | Printables.com</title>
    <meta property="og:title" content="Articulated Dragon by Jane | Download free STL model | Printables.com">
    <meta property="og:image" content="https://media.printables.com/media/prints/234567/images/dragon.webp">
    ${ld({
      '@context': 'https://schema.org',
      '@type': '3DModel',
      name: 'Articulated Dragon',
      author: { '@type': 'Person', name: 'Jane' },
      description: '<p>A print-in-place dragon with 30 joints.</p><p>PLA, 0.2 mm layers.</p>',
      image: 'https://media.printables.com/media/prints/234567/images/dragon_large.webp',
      encoding: [
        { '@type': 'MediaObject', name: 'dragon.3mf', encodingFormat: 'model/3mf', contentSize: '4.1 MB' },
        { '@type': 'MediaObject', name: 'dragon_body.stl', contentSize: '12 MB' },
      ],
    })}
    </head><body></body></html>`,
  'www.thingiverse.com/thing:345678': `<html><head>
    <title>Cable Clips by Bob - Thingiverse</title>
    <meta property="og:title" content="Cable Clips">
    <meta property="og:description" content="Clips for desk cables &amp; chargers.">
    <meta property="og:image" content="https://cdn.thingiverse.com/assets/ab/cd/cable_clips.jpg">
    <meta name="twitter:creator" content="Bob">
    </head></html>`,
  'www.myminifactory.com/object/3d-print-castle-tower-456789': `<html><head>
    <meta property="og:title" content="Castle Tower">
    ${ld({
      '@context': 'https://schema.org',
      '@type': 'Product',
      name: 'Castle Tower',
      brand: { '@type': 'Brand', name: 'Medieval Minis' },
      description: 'A modular castle tower for tabletop games.',
      image: ['https://dl.myminifactory.com/object-assets/castle/tower.jpg'],
    })}
    </head></html>`,
  'cults3d.com/en/3d-model/gadget/phone-stand': `<html><head>
    <meta property="og:title" content="Phone Stand">
    <meta property="og:description" content="Adjustable phone stand.">
    <meta property="og:image" content="https://files.cults3d.com/uploaders/phone-stand.png">
    ${ld({ '@type': 'CreativeWork', name: 'Phone Stand', creator: 'Lena3D', encoding: { contentUrl: 'https://files.cults3d.com/phone_stand.stl' } })}
    </head></html>`,
};

export const IMPORTS = [
  {
    platform: 'makerworld',
    url: 'https://makerworld.com/en/models/123456-flexi-rex?from=search#profileId-99',
    again: 'https://makerworld.com/de/models/123456',
    model_id: '123456',
    source_url: 'https://makerworld.com/en/models/123456',
    offline_title: 'Flexi rex',
    meta: {
      title: 'Flexi Rex - Print in place',
      creator_name: 'DinoMaker',
      description: 'An articulated T-Rex, printed in one piece. No supports needed.',
      thumbnail_url: 'https://makerworld.bblmw.com/makerworld/model/flexirex/cover.jpg',
      file_info: NO_FILES,
    },
  },
  {
    platform: 'printables',
    url: 'https://www.printables.com/de/model/234567-articulated-dragon/files',
    again: 'https://printables.com/model/234567',
    model_id: '234567',
    source_url: 'https://www.printables.com/model/234567',
    offline_title: 'Articulated dragon',
    meta: {
      title: 'Articulated Dragon',
      creator_name: 'Jane',
      description: 'A print-in-place dragon with 30 joints.\nPLA, 0.2 mm layers.',
      thumbnail_url: 'https://media.printables.com/media/prints/234567/images/dragon_large.webp',
      file_info: {
        file_count: 2,
        formats: ['3MF', 'STL'],
        files: [
          { name: 'dragon.3mf', format: '3MF', size: '4.1 MB' },
          { name: 'dragon_body.stl', format: 'STL', size: '12 MB' },
        ],
      },
    },
  },
  {
    platform: 'thingiverse',
    url: 'https://www.thingiverse.com/thing:345678/files',
    again: 'https://thingiverse.com/thing:345678',
    model_id: '345678',
    source_url: 'https://www.thingiverse.com/thing:345678',
    offline_title: 'Thingiverse model 345678',
    meta: {
      title: 'Cable Clips',
      creator_name: 'Bob',
      description: 'Clips for desk cables & chargers.',
      thumbnail_url: 'https://cdn.thingiverse.com/assets/ab/cd/cable_clips.jpg',
      file_info: NO_FILES,
    },
  },
  {
    platform: 'myminifactory',
    url: 'https://www.myminifactory.com/object/3d-print-castle-tower-456789?ref=home',
    again: 'https://myminifactory.com/object/3d-print-castle-tower-456789/',
    model_id: '456789',
    source_url: 'https://www.myminifactory.com/object/3d-print-castle-tower-456789',
    offline_title: 'Castle tower',
    meta: {
      title: 'Castle Tower',
      creator_name: 'Medieval Minis',
      description: 'A modular castle tower for tabletop games.',
      thumbnail_url: 'https://dl.myminifactory.com/object-assets/castle/tower.jpg',
      file_info: NO_FILES,
    },
  },
  {
    platform: 'cults3d',
    url: 'https://cults3d.com/fr/mod%C3%A8le-3d/gadget/phone-stand',
    again: 'https://cults3d.com/en/3d-model/gadget/phone-stand?utm_source=newsletter',
    model_id: 'phone-stand',
    source_url: 'https://cults3d.com/en/3d-model/gadget/phone-stand',
    offline_title: 'Phone stand',
    meta: {
      title: 'Phone Stand',
      creator_name: 'Lena3D',
      description: 'Adjustable phone stand.',
      thumbnail_url: 'https://files.cults3d.com/uploaders/phone-stand.png',
      file_info: { file_count: 1, formats: ['STL'], files: [{ name: 'phone_stand.stl', format: 'STL', size: null }] },
    },
  },
] as const;
