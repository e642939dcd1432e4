import { isNewer } from '../../service/system/update-check';

describe('isNewer', () => {
  test.each([
    ['9.9.9', '0.1.0'],
    ['v9.9.9', '0.1.0'],
    ['V1.0.1', '1.0.0'],
    ['0.2.0', '0.1.9'],
    ['1.10.0', '1.9.0'],
    ['1.0.10', '1.0.9'],
    ['2', '1.99.99'],
    ['1.0.1', '1.0'],
    ['1.0.0', '1.0.0-beta.1'],
    ['v1.0.0', '1.0.0-rc.1'],
    ['1.0.1-beta.1', '1.0.0'],
    [' 1.2.4 ', '1.2.3'],
    // Pre-releases of the same version follow semver precedence.
    ['1.0.0-rc.2', '1.0.0-rc.1'],
    ['1.0.0-rc.10', '1.0.0-rc.9'],
    ['1.0.0-rc.1', '1.0.0-beta.5'],
    ['1.0.0-beta', '1.0.0-alpha.3'],
    ['1.0.0-beta.1', '1.0.0-beta'],
    ['1.0.0-beta.x', '1.0.0-beta.1'],
    ['1.0.0-beta-2', '1.0.0-beta-1'],
  ])('%s is newer than %s', (candidate, current) => {
    expect(isNewer(candidate, current)).toBe(true);
  });

  test.each([
    ['1.0.0', '1.0.0'],
    ['v1.0.0', '1.0.0'],
    ['1.0', '1.0.0'],
    ['1.0.0', '1.0'],
    ['0.9.9', '1.0.0'],
    ['1.9.0', '1.10.0'],
    ['1.0.0-beta.1', '1.0.0'],
    ['1.0.0-rc.1', '1.0.0-rc.1'],
    ['1.0.0-rc.1', '1.0.0-rc.2'],
    ['1.0.0-alpha', '1.0.0-alpha.1'],
    ['0.1.0', '0.1.0'],
    // Build metadata does not count.
    ['1.0.0+build.5', '1.0.0+build.4'],
    ['1.0.0+20260101', '1.0.0'],
  ])('%s is not newer than %s', (candidate, current) => {
    expect(isNewer(candidate, current)).toBe(false);
  });

  test('is a strict order: never both ways', () => {
    // The semver.org precedence example, then some releases.
    const versions = [
      '0.1.0',
      '0.1.1',
      '0.2.0',
      '1.0.0-alpha',
      '1.0.0-alpha.1',
      '1.0.0-alpha.beta',
      '1.0.0-beta',
      '1.0.0-beta.2',
      '1.0.0-beta.11',
      '1.0.0-rc.1',
      '1.0.0',
      '1.0.1',
      '1.10.0',
      '2.0.0',
    ];
    for (const a of versions) {
      for (const b of versions) {
        expect(isNewer(a, b) && isNewer(b, a)).toBe(false);
        if (a === b) expect(isNewer(a, b)).toBe(false);
      }
    }
    // And the listed order is ascending.
    for (let i = 1; i < versions.length; i++) expect(isNewer(versions[i], versions[i - 1])).toBe(true);
  });
});
