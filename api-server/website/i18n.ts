// The website's two languages: which one a request gets (`?lang=`, then the `lang` cookie a switch leaves,
// then Accept-Language, then English), its messages, and how numbers, times, countries, provinces and carriers
// read in it. Pure, apart from Intl.
import Negotiator from 'negotiator';
import { type Isp, type PROVINCES } from '../../common/vocabulary.ts';
import type { Quota } from '../keys/tiers.ts';
import { en, type Messages } from './messages/en.ts';
import { zhCN } from './messages/zh-CN.ts';

export const LANGUAGES = ['en', 'zh-CN'] as const;
export type Lang = (typeof LANGUAGES)[number];

const MESSAGES: Record<Lang, Messages> = { en, 'zh-CN': zhCN };

/** The cookie a language switch leaves, read before Accept-Language. */
export const LANGUAGE_COOKIE = 'lang';

export function isLang(value: unknown): value is Lang {
  return typeof value === 'string' && (LANGUAGES as readonly string[]).includes(value);
}

/** `asked` = the `lang` query parameter, `cookie` = the language cookie's value. */
export function chooseLanguage(asked: unknown, cookie: string | undefined, acceptLanguage: string | undefined): Lang {
  if (isLang(asked)) return asked;
  if (isLang(cookie)) return cookie;
  if (!acceptLanguage) return 'en';
  // `zh` and every zh-* (Traditional included: Simplified is closer than English) read Chinese.
  const chosen = new Negotiator({ headers: { 'accept-language': acceptLanguage } }).language(['en', 'zh-CN', 'zh']);
  return chosen === 'zh-CN' || chosen === 'zh' ? 'zh-CN' : 'en';
}

/** Provinces in English, for the province filter (the API takes the Chinese names); the type makes it complete. */
const PROVINCE_ENGLISH: Record<(typeof PROVINCES)[number], string> = {
  北京市: 'Beijing', 天津市: 'Tianjin', 上海市: 'Shanghai', 重庆市: 'Chongqing',
  河北省: 'Hebei', 山西省: 'Shanxi', 辽宁省: 'Liaoning', 吉林省: 'Jilin', 黑龙江省: 'Heilongjiang', 江苏省: 'Jiangsu',
  浙江省: 'Zhejiang', 安徽省: 'Anhui', 福建省: 'Fujian', 江西省: 'Jiangxi', 山东省: 'Shandong', 河南省: 'Henan',
  湖北省: 'Hubei', 湖南省: 'Hunan', 广东省: 'Guangdong', 海南省: 'Hainan', 四川省: 'Sichuan', 贵州省: 'Guizhou',
  云南省: 'Yunnan', 陕西省: 'Shaanxi', 甘肃省: 'Gansu', 青海省: 'Qinghai', 台湾省: 'Taiwan',
  内蒙古自治区: 'Inner Mongolia', 广西壮族自治区: 'Guangxi', 西藏自治区: 'Tibet', 宁夏回族自治区: 'Ningxia',
  新疆维吾尔自治区: 'Xinjiang', 香港特别行政区: 'Hong Kong', 澳门特别行政区: 'Macao',
};

const CARRIER_ENGLISH: Record<Isp, string> = { 电信: 'China Telecom', 联通: 'China Unicom', 移动: 'China Mobile' };

/** Everything a page needs to speak one language. */
export interface Locale {
  lang: Lang;
  t: Messages;
  number(n: number): string;
  /** A time in UTC, to the minute. */
  time(at: Date): string;
  /** An hour in tables: "Nov 24, 13:00" / "11月24日 13:00". */
  hour(at: Date): string;
  /** A tick of a time axis, short: the day at midnight ("Nov 24"), else the time ("13:00"). */
  tick(at: Date): string;
  /** A country by its ISO 3166 code; the code itself when Intl does not know it. */
  country(code: string): string;
  /** A province by its Chinese name as the API takes it: "Guangdong (广东省)" in English, "广东省" in Chinese. */
  province(name: string): string;
  /** A carrier by the API's value: "China Telecom (电信)" / "中国电信". */
  carrier(value: string): string;
  tier(name: string): string;
  quota(q: Quota | undefined): string;
}

const locales = new Map<Lang, Locale>();

export function localeOf(lang: Lang): Locale {
  let locale = locales.get(lang);
  if (!locale) locales.set(lang, (locale = makeLocale(lang)));
  return locale;
}

function makeLocale(lang: Lang): Locale {
  const t = MESSAGES[lang];
  const numbers = new Intl.NumberFormat(lang);
  const times = new Intl.DateTimeFormat(lang, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC', hourCycle: 'h23' });
  const hours = new Intl.DateTimeFormat(lang, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZone: 'UTC', hourCycle: 'h23' });
  const days = new Intl.DateTimeFormat(lang, { month: 'short', day: 'numeric', timeZone: 'UTC' });
  const clock = new Intl.DateTimeFormat(lang, { hour: '2-digit', minute: '2-digit', timeZone: 'UTC', hourCycle: 'h23' });
  const regions = new Intl.DisplayNames([lang], { type: 'region', fallback: 'code' });
  const chinese = lang === 'zh-CN';
  return {
    lang,
    t,
    number: (n) => numbers.format(n),
    time: (at) => `${times.format(at)} UTC`,
    hour: (at) => hours.format(at),
    tick: (at) => (at.getUTCHours() === 0 && at.getUTCMinutes() === 0 ? days.format(at) : clock.format(at)),
    country: (code) => {
      try {
        return regions.of(code.toUpperCase()) ?? code;
      } catch {
        return code;
      }
    },
    province: (name) => {
      const english = PROVINCE_ENGLISH[name as (typeof PROVINCES)[number]];
      return chinese || !english ? name : `${english} (${name})`;
    },
    carrier: (value) => {
      const english = CARRIER_ENGLISH[value as Isp];
      if (!english) return value;
      return chinese ? `中国${value}` : `${english} (${value})`;
    },
    tier: (name) => t.tiers[name] ?? name,
    quota: (q) => (!q || q.kind === 'none' ? t.quota.none : q.kind === 'unlimited' ? t.quota.unlimited : t.quota.daily(numbers.format(q.calls))),
  };
}
