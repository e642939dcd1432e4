import { FETCHABLE_HOSTS, recogniseModelUrl, titleFromSlug, trendingModelUrl } from '../../service/ideas/platforms';

function recognised(url: string) {
  const r = recogniseModelUrl(url);
  if (!r.ok) throw new Error(`not recognised: ${url}: ${r.reason}`);
  return r.model;
}

function refused(url: string): string {
  const r = recogniseModelUrl(url);
  if (r.ok) throw new Error(`accepted: ${url} as ${r.model.platform} ${r.model.model_id}`);
  return r.reason;
}

describe('model URL recognition', () => {
  describe('MakerWorld', () => {
    test.each([
      ['https://makerworld.com/en/models/123456-some-slug?from=search', '123456', 'some-slug', 'Some slug'],
      ['https://makerworld.com/en/models/123456-some-slug?from=search#profileId-987', '123456', 'some-slug', 'Some slug'],
      ['https://makerworld.com/models/123456', '123456', null, 'MakerWorld model 123456'],
      ['https://makerworld.com/zh/models/42-%E6%9C%BA%E5%99%A8%E4%BA%BA', '42', '%E6%9C%BA%E5%99%A8%E4%BA%BA', '机器人'],
      ['https://makerworld.com/de/models/7-gear_box/', '7', 'gear_box', 'Gear box'],
      ['https://www.makerworld.com/en/models/1234567', '1234567', null, 'MakerWorld model 1234567'],
      ['http://makerworld.com/en/models/99-benchy', '99', 'benchy', 'Benchy'],
      ['HTTPS://MakerWorld.COM/en/models/5-x', '5', 'x', 'X'],
      ['  https://makerworld.com/en/models/5-padded  ', '5', 'padded', 'Padded'],
      ['https://makerworld.com:443/en/models/5', '5', null, 'MakerWorld model 5'],
    ])('%s', (url, id, slug, title) => {
      expect(recognised(url)).toEqual({
        platform: 'makerworld',
        model_id: id,
        slug,
        canonical_url: `https://makerworld.com/en/models/${id}`,
        title_hint: title,
      });
    });
    test('refuses pages that are not models', () => {
      expect(refused('https://makerworld.com/')).toMatch(/not a MakerWorld model page/);
      expect(refused('https://makerworld.com/en/models/abc')).toMatch(/not a MakerWorld model page/);
      expect(refused('https://makerworld.com/en/@someone/upload')).toMatch(/not a MakerWorld model page/);
      expect(refused('https://makerworld.com/en/models/123/../../evil')).toMatch(/not a MakerWorld model page/);
    });
  });

  describe('Printables', () => {
    test.each([
      ['https://www.printables.com/model/123456-slug', '123456', 'Slug'],
      ['https://www.printables.com/de/model/123456', '123456', 'Printables model 123456'],
      ['https://printables.com/model/123456-articulated-dragon/files', '123456', 'Articulated dragon'],
      ['https://www.printables.com/model/123456-articulated-dragon/comments?lang=cs', '123456', 'Articulated dragon'],
      ['https://www.printables.com/cs/model/9-kostka?utm_source=x#files', '9', 'Kostka'],
    ])('%s', (url, id, title) => {
      const m = recognised(url);
      expect(m).toMatchObject({ platform: 'printables', model_id: id, canonical_url: `https://www.printables.com/model/${id}`, title_hint: title });
    });
    test('refuses other Printables pages', () => {
      expect(refused('https://www.printables.com/social/1234-someone/models')).toMatch(/Printables model page/);
      expect(refused('https://www.printables.com/model/')).toMatch(/Printables model page/);
    });
  });

  describe('Thingiverse', () => {
    test.each([
      ['https://www.thingiverse.com/thing:123456', '123456'],
      ['https://thingiverse.com/thing:763622/files', '763622'],
      ['https://www.thingiverse.com/thing:3495390/makes?sort=new', '3495390'],
    ])('%s', (url, id) => {
      expect(recognised(url)).toEqual({
        platform: 'thingiverse',
        model_id: id,
        slug: null,
        canonical_url: `https://www.thingiverse.com/thing:${id}`,
        title_hint: `Thingiverse model ${id}`,
      });
    });
    test('refuses other Thingiverse pages', () => {
      expect(refused('https://www.thingiverse.com/someone/designs')).toMatch(/Thingiverse model page/);
      expect(refused('https://www.thingiverse.com/thing:abc')).toMatch(/Thingiverse model page/);
    });
  });

  describe('MyMiniFactory', () => {
    test.each([
      ['https://www.myminifactory.com/object/3d-print-some-name-123456', '123456', 'Some name', 'https://www.myminifactory.com/object/3d-print-some-name-123456'],
      ['https://myminifactory.com/object/3d-print-dragon-bust-98765?ref=home', '98765', 'Dragon bust', 'https://www.myminifactory.com/object/3d-print-dragon-bust-98765'],
      ['https://www.myminifactory.com/de/object/3d-print-Castle-Tower-55/', '55', 'Castle tower', 'https://www.myminifactory.com/object/3d-print-castle-tower-55'],
      ['https://www.myminifactory.com/object/123456', '123456', 'MyMiniFactory model 123456', 'https://www.myminifactory.com/object/123456'],
    ])('%s', (url, id, title, canonical) => {
      expect(recognised(url)).toMatchObject({ platform: 'myminifactory', model_id: id, title_hint: title, canonical_url: canonical });
    });
    test('refuses other MyMiniFactory pages', () => {
      expect(refused('https://www.myminifactory.com/users/someone')).toMatch(/MyMiniFactory model page/);
      expect(refused('https://www.myminifactory.com/object/3d-print-no-id')).toMatch(/MyMiniFactory model page/);
    });
  });

  describe('Cults3D (the slug is the model id)', () => {
    test.each([
      ['https://cults3d.com/en/3d-model/gadget/some-slug', 'gadget', 'some-slug', 'Some slug'],
      ['https://cults3d.com/fr/mod%C3%A8le-3d/maison/porte-savon', 'maison', 'porte-savon', 'Porte savon'],
      ['https://cults3d.com/es/modelo-3d/arte/dragon-articulado?utm=x', 'arte', 'dragon-articulado', 'Dragon articulado'],
      ['https://www.cults3d.com/en/3d-model/home/Cable-Clip/', 'home', 'cable-clip', 'Cable clip'],
      ['https://cults3d.com/3d-model/tool/wrench-2', 'tool', 'wrench-2', 'Wrench 2'],
    ])('%s', (url, category, slug, title) => {
      expect(recognised(url)).toEqual({
        platform: 'cults3d',
        model_id: slug,
        slug,
        canonical_url: `https://cults3d.com/en/3d-model/${category}/${slug}`,
        title_hint: title,
      });
    });
    test('refuses other Cults3D pages', () => {
      expect(refused('https://cults3d.com/en/users/someone')).toMatch(/Cults3D model page/);
      expect(refused('https://cults3d.com/en/blog/articles/some-post')).toMatch(/Cults3D model page/);
    });
  });

  describe('hostile URLs are refused', () => {
    test.each([
      ['a lookalike host', 'https://makerworld.com.evil.net/en/models/123456', /host "makerworld\.com\.evil\.net" is not a supported platform/],
      ['a lookalike subdomain', 'https://evilmakerworld.com/en/models/123456', /not a supported platform/],
      ['another subdomain of a platform', 'https://api.printables.com/model/123456', /not a supported platform/],
      ['the platform in the path', 'https://evil.net/makerworld.com/en/models/123456', /host "evil\.net"/],
      ['a user part that looks like the host', 'https://makerworld.com@evil.net/en/models/1', /credentials/],
      ['credentials', 'https://user:pass@www.printables.com/model/1', /credentials/],
      ['a user name only', 'https://user@www.thingiverse.com/thing:1', /credentials/],
      ['an IPv4 literal', 'http://127.0.0.1/model/123456', /IP addresses/],
      ['an IPv4 literal of a cloud metadata service', 'http://169.254.169.254/latest/meta-data', /IP addresses/],
      ['an integer IPv4', 'http://2130706433/thing:1', /IP addresses/],
      ['a hex IPv4', 'http://0x7f.1/thing:1', /IP addresses/],
      ['an IPv6 literal', 'http://[::1]/model/1', /IP addresses/],
      ['localhost', 'http://localhost:8000/api/v1/printers', /not a supported platform/],
      ['file:', 'file:///etc/passwd', /scheme "file"/],
      ['ftp:', 'ftp://makerworld.com/en/models/1', /scheme "ftp"/],
      ['javascript:', 'javascript:alert(1)', /scheme "javascript"/],
      ['data:', 'data:text/html,<script>alert(1)</script>', /scheme "data"/],
      ['gopher:', 'gopher://www.thingiverse.com/thing:1', /scheme "gopher"/],
      ['a custom port', 'https://makerworld.com:8443/en/models/1', /port 8443/],
      ['port 80 on https', 'https://www.printables.com:80/model/1', /port 80/],
      ['a trailing dot host', 'https://makerworld.com./en/models/1', /not a supported platform/],
      ['a punycode lookalike', 'https://xn--makerwrld-q7a.com/en/models/1', /not a supported platform/],
      ['a unicode lookalike', 'https://makerwörld.com/en/models/1', /not a supported platform/],
      ['a relative URL', '/en/models/123456', /not a valid absolute URL/],
      ['a bare host', 'makerworld.com/en/models/123456', /not a valid absolute URL/],
      ['an empty string', '', /must be a URL/],
      ['a backslash trick', 'https://makerworld.com\\@evil.net/en/models/1', /not a MakerWorld model page/],
    ])('%s', (_name, url, reason) => {
      expect(refused(url)).toMatch(reason);
    });

    test('a URL longer than 2048 characters', () => {
      expect(refused(`https://makerworld.com/en/models/1-${'a'.repeat(2100)}`)).toMatch(/at most 2048/);
    });

    test('an id longer than 12 digits is no model id', () => {
      refused('https://www.thingiverse.com/thing:1234567890123');
    });
  });

  test('the only fetchable hosts are the five platforms', () => {
    expect([...FETCHABLE_HOSTS].sort()).toEqual(
      [
        'cults3d.com',
        'makerworld.com',
        'myminifactory.com',
        'printables.com',
        'thingiverse.com',
        'www.cults3d.com',
        'www.makerworld.com',
        'www.myminifactory.com',
        'www.printables.com',
        'www.thingiverse.com',
      ].sort(),
    );
  });

  test('titles from slugs', () => {
    expect(titleFromSlug('my-cool_model')).toBe('My cool model');
    expect(titleFromSlug('%E2%9C%93-check')).toBe('✓ check');
    expect(titleFromSlug('---')).toBeNull();
    expect(titleFromSlug('bad%zzescape')).toBe('Bad%zzescape');
    expect(titleFromSlug('a%E2%80%8Bb')).toBe('Ab'); // zero-width space dropped
    expect(titleFromSlug(null)).toBeNull();
  });

  test('trending model pages are built from ids of the platform only', () => {
    expect(trendingModelUrl('makerworld', '123')).toBe('https://makerworld.com/en/models/123');
    expect(trendingModelUrl('printables', '456')).toBe('https://www.printables.com/model/456');
    expect(trendingModelUrl('makerworld', '12/../../x')).toBeNull();
    expect(trendingModelUrl('printables', 'abc')).toBeNull();
  });
});
