// Which language a request gets, and how figures, places and carriers read in each.
import { describe, expect, it } from 'vitest';
import { PROVINCES } from '../../../../common/vocabulary.ts';
import { chooseLanguage, localeOf } from '../../../../api-server/website/i18n.ts';

describe('chooseLanguage', () => {
  it('takes ?lang=, then the cookie, then Accept-Language, then English', () => {
    expect(chooseLanguage('zh-CN', 'en', 'en-US')).toBe('zh-CN');
    expect(chooseLanguage('fr', 'zh-CN', 'en-US')).toBe('zh-CN');
    expect(chooseLanguage(undefined, 'klingon', 'zh-CN,zh;q=0.9,en;q=0.8')).toBe('zh-CN');
    expect(chooseLanguage(undefined, undefined, 'zh')).toBe('zh-CN');
    expect(chooseLanguage(undefined, undefined, 'zh-TW,zh;q=0.9')).toBe('zh-CN');
    expect(chooseLanguage(undefined, undefined, 'de-DE,en;q=0.5,zh;q=0.4')).toBe('en');
    expect(chooseLanguage(undefined, undefined, 'fr')).toBe('en');
    expect(chooseLanguage(undefined, undefined, undefined)).toBe('en');
  });
});

describe('locales', () => {
  const en = localeOf('en');
  const zh = localeOf('zh-CN');

  it('formats numbers and UTC times in each language', () => {
    const at = new Date(Date.UTC(2026, 10, 24, 13, 5));
    expect(en.number(1234567)).toBe('1,234,567');
    expect(en.time(at)).toBe('Nov 24, 2026, 13:05 UTC');
    expect(zh.time(at)).toBe('2026年11月24日 13:05 UTC');
    expect(en.tick(at)).toBe('13:05');
    expect(en.tick(new Date(Date.UTC(2026, 10, 24)))).toBe('Nov 24');
    expect(zh.tick(new Date(Date.UTC(2026, 10, 24)))).toBe('11月24日');
  });

  it('names countries, provinces and carriers in both languages', () => {
    expect(en.country('CN')).toBe('China');
    expect(zh.country('US')).toBe('美国');
    expect(en.country('XX')).toBe('XX');
    expect(en.province('广东省')).toBe('Guangdong (广东省)');
    expect(zh.province('广东省')).toBe('广东省');
    expect(en.carrier('电信')).toBe('China Telecom (电信)');
    expect(zh.carrier('移动')).toBe('中国移动');
    for (const p of PROVINCES) expect(en.province(p)).toMatch(/^[A-Z][a-z]+( [A-Z][a-z]+)? \(/);
  });

  it('describes tiers and their quotas', () => {
    expect(en.tier('pro')).toBe('Pro');
    expect(zh.tier('pro')).toBe('专业版');
    expect(en.tier('gold')).toBe('gold');
    expect(en.quota({ kind: 'daily', calls: 10_000 })).toBe('10,000 calls per UTC day');
    expect(zh.quota({ kind: 'unlimited' })).toBe('不限');
    expect(en.quota({ kind: 'none' })).toMatch(/^none: download the basic blocklist/);
  });
});
