import { cleanText, decodeEntities, extractMetadata, jsonLd, metaTags } from '../../service/ideas/metadata';

const PAGE = 'https://www.printables.com/model/123456-articulated-dragon';

describe('model page metadata', () => {
  test('reads OpenGraph tags when the page has no JSON-LD', () => {
    const html = `<!doctype html><html><head>
      <title>Articulated Dragon by Jane | Download free STL model | Printables.com</title>
      <meta property="og:title" content="Articulated Dragon &amp; Egg">
      <meta property='og:description' content='A print-in-place dragon.&#10;No supports.'>
      <meta content="/media/dragon.webp" property="og:image" />
      <meta name="author" content="Jane Maker">
      </head><body></body></html>`;
    expect(extractMetadata(html, PAGE)).toEqual({
      title: 'Articulated Dragon & Egg',
      creator_name: 'Jane Maker',
      description: 'A print-in-place dragon.\nNo supports.',
      thumbnail_url: 'https://www.printables.com/media/dragon.webp',
      file_info: null,
    });
  });

  test('prefers JSON-LD (name, author, description, image, files) over OpenGraph', () => {
    const ld = {
      '@context': 'https://schema.org',
      '@graph': [
        { '@type': 'BreadcrumbList', name: 'Crumbs' },
        {
          '@type': ['3DModel', 'Product'],
          name: 'Gearbox <b>v2</b>',
          author: [{ '@type': 'Person', name: 'Ada' }],
          description: '<p>Planetary gearbox.</p><p>Prints in PETG.</p>',
          image: [{ '@type': 'ImageObject', url: 'https://cdn.example/gear.png' }],
          encoding: [
            { '@type': 'MediaObject', name: 'housing.stl', contentSize: '1.2 MB' },
            { '@type': 'MediaObject', contentUrl: 'https://files.example/dl/gear%20set.3mf?token=1', encodingFormat: 'model/3mf' },
          ],
        },
      ],
    };
    const html = `<head><meta property="og:title" content="OG title"><meta property="og:image" content="https://cdn.example/og.png">
      <script type="application/ld+json">${JSON.stringify(ld)}</script></head>`;
    expect(extractMetadata(html, PAGE)).toEqual({
      title: 'Gearbox v2',
      creator_name: 'Ada',
      description: 'Planetary gearbox.\nPrints in PETG.',
      thumbnail_url: 'https://cdn.example/gear.png',
      file_info: {
        file_count: 2,
        formats: ['STL', '3MF'],
        files: [
          { name: 'housing.stl', format: 'STL', size: '1.2 MB' },
          { name: 'gear set.3mf', format: '3MF', size: null },
        ],
      },
    });
  });

  test('a broken JSON-LD block is skipped, the other sources still count', () => {
    const html = `<script type="application/ld+json">{"name": broken</script>
      <script type="application/ld+json">{"@type":"Product","name":"Good","creator":"Bob"}</script>`;
    expect(extractMetadata(html, PAGE)).toMatchObject({ title: 'Good', creator_name: 'Bob' });
    expect(jsonLd('<script type="text/javascript">{"name":"x"}</script>')).toEqual([]);
  });

  test('refuses thumbnails that are not http(s) and drops control characters', () => {
    const html = `<meta property="og:image" content="javascript:alert(1)"><meta property="og:title" content="A\u0007B\u200bC">`;
    const meta = extractMetadata(html, PAGE);
    expect(meta.thumbnail_url).toBeNull();
    expect(meta.title).toBe('A BC');
  });

  test('caps long texts', () => {
    const html = `<meta property="og:title" content="${'x'.repeat(1000)}"><meta property="og:description" content="${'y'.repeat(20_000)}">`;
    const meta = extractMetadata(html, PAGE);
    expect(meta.title).toHaveLength(300);
    expect(meta.description).toHaveLength(10_000);
  });

  test('an empty page gives nothing', () => {
    expect(extractMetadata('', PAGE)).toEqual({ title: null, creator_name: null, description: null, thumbnail_url: null, file_info: null });
  });

  test('entities and helpers', () => {
    expect(decodeEntities('&lt;a&gt; &quot;b&quot; &#39;c&#x27; &#128512; &#xD800; &bogus;')).toBe(`<a> "b" 'c' 😀 &#xD800; &bogus;`);
    expect(cleanText('  a \n\t b ', 10)).toBe('a b');
    expect(cleanText(42, 10)).toBeNull();
    expect(metaTags('<meta name="Description" content="first"><meta name="description" content="second">').get('description')).toBe('first');
  });
});
