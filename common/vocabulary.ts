// The filter vocabulary of the blocklist API (docs/http-api.md). Shared by the api-server
// (validation, classification, OpenAPI) and the controller (CRD enums), so both always agree.

export const SERVICES = ['ssh', 'rdp', 'vnc', 'db', 'web', 'smb', 'telnet', 'mail', 'ics', 'ai', 'proxy'] as const;
export type Service = (typeof SERVICES)[number];

/** A service's position in SERVICES (its bit in ip_hourly.services, its slot in addresses.service_last). */
export const SERVICE_INDEX: ReadonlyMap<string, number> = new Map(SERVICES.map((s, i) => [s, i]));

/** Well-known ports of each service, used to name the service of a bare port (telescope rows). */
export const SERVICE_PORTS: Readonly<Record<Service, readonly number[]>> = {
  ssh: [22, 2222],
  rdp: [3389],
  vnc: [5900, 5901, 5902],
  db: [1433, 1521, 3306, 5432, 6379, 9200, 11211, 27017, 5984, 9042, 7474],
  web: [80, 443, 8000, 8008, 8080, 8081, 8443, 8888, 9000],
  smb: [139, 445],
  telnet: [23, 2323],
  mail: [25, 110, 143, 465, 587, 993, 995],
  ics: [102, 502, 1911, 2404, 20000, 44818, 47808],
  ai: [11434, 7860, 8188, 6006, 8265],
  proxy: [1080, 3128, 8118, 9050, 8123],
};

const PORT_TO_SERVICE = new Map<number, Service>(
  Object.entries(SERVICE_PORTS).flatMap(([service, ports]) => ports.map((p) => [p, service as Service] as const)),
);

/** The service a destination port belongs to, or undefined for ports outside the vocabulary. */
export function serviceOfPort(port: number): Service | undefined {
  return PORT_TO_SERVICE.get(port);
}

export const SOURCES = ['honeypot', 'telescope'] as const;
export type Source = (typeof SOURCES)[number];

export const TYPES = ['attacker', 'scanner', 'research_scanner', 'asset_scanner'] as const;
export type AddressType = (typeof TYPES)[number];

/** Danger levels, least to most severe. A filter `level=X` means "X or worse". */
export const LEVELS = ['medium', 'high', 'critical'] as const;
export type Level = (typeof LEVELS)[number];

export const PRECISIONS = ['standard', 'high'] as const;
export type Precision = (typeof PRECISIONS)[number];

export const NETS = ['idc', 'broadband', 'mobile', 'edu'] as const;
export type Net = (typeof NETS)[number];

/** Carrier filter values (spec: 电信 China Telecom, 联通 China Unicom, 移动 China Mobile). */
export const ISPS = ['电信', '联通', '移动'] as const;
export type Isp = (typeof ISPS)[number];

export const FORMATS = ['txt', 'csv', 'json'] as const;
export type Format = (typeof FORMATS)[number];

/** Provincial-level divisions of China as ip2region names them; the filter accepts them with or without suffix. */
export const PROVINCES = [
  '北京市', '天津市', '上海市', '重庆市',
  '河北省', '山西省', '辽宁省', '吉林省', '黑龙江省', '江苏省', '浙江省', '安徽省', '福建省', '江西省', '山东省',
  '河南省', '湖北省', '湖南省', '广东省', '海南省', '四川省', '贵州省', '云南省', '陕西省', '甘肃省', '青海省', '台湾省',
  '内蒙古自治区', '广西壮族自治区', '西藏自治区', '宁夏回族自治区', '新疆维吾尔自治区',
  '香港特别行政区', '澳门特别行政区',
] as const;

const PROVINCE_SUFFIXES = ['特别行政区', '维吾尔自治区', '壮族自治区', '回族自治区', '自治区', '省', '市'];

/** 广东 and 广东省 both name 广东省; returns undefined for names that are not a province. */
export function normalizeProvince(name: string): string | undefined {
  const trimmed = name.trim();
  if ((PROVINCES as readonly string[]).includes(trimmed)) return trimmed;
  return PROVINCES.find((p) => PROVINCE_SUFFIXES.some((s) => p.endsWith(s) && p.slice(0, -s.length) === trimmed));
}

/** The shortest accepted form of each province (广东, 内蒙古, 香港, ...), for documentation and enums. */
export const PROVINCE_SHORT_NAMES: readonly string[] = PROVINCES.map(
  (p) => PROVINCE_SUFFIXES.reduce((name, s) => (name.endsWith(s) && name.length > s.length ? name.slice(0, -s.length) : name), p),
);

/** Limits fixed by the service specification (docs/http-api.md). */
export const LIMITS = {
  dedupMaxHours: 168,
  exportMaxHours: 720,
  exportMaxRecords: 1_000_000,
  recentMaxLimit: 1000,
} as const;
