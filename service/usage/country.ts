/**
 * The country of an installation, guessed from its time zone (setting
 * `timezone`): the only location the usage statistics carry. No IP address
 * or other locator is ever looked at. A zone that is not a country's (UTC,
 * Etc/GMT+1...) or not in this table gives "XX".
 */

/** IANA zone -> ISO 3166-1 alpha-2 country, for the canonical zones and common aliases. */
const ZONES: Record<string, string> = {
  // Europe
  'Europe/Amsterdam': 'NL', 'Europe/Andorra': 'AD', 'Europe/Athens': 'GR', 'Europe/Belgrade': 'RS', 'Europe/Berlin': 'DE',
  'Europe/Bratislava': 'SK', 'Europe/Brussels': 'BE', 'Europe/Bucharest': 'RO', 'Europe/Budapest': 'HU', 'Europe/Busingen': 'DE',
  'Europe/Chisinau': 'MD', 'Europe/Copenhagen': 'DK', 'Europe/Dublin': 'IE', 'Europe/Gibraltar': 'GI', 'Europe/Guernsey': 'GG',
  'Europe/Helsinki': 'FI', 'Europe/Isle_of_Man': 'IM', 'Europe/Istanbul': 'TR', 'Europe/Jersey': 'JE', 'Europe/Kaliningrad': 'RU',
  'Europe/Kiev': 'UA', 'Europe/Kyiv': 'UA', 'Europe/Kirov': 'RU', 'Europe/Lisbon': 'PT', 'Europe/Ljubljana': 'SI', 'Europe/London': 'GB',
  'Europe/Luxembourg': 'LU', 'Europe/Madrid': 'ES', 'Europe/Malta': 'MT', 'Europe/Mariehamn': 'AX', 'Europe/Minsk': 'BY',
  'Europe/Monaco': 'MC', 'Europe/Moscow': 'RU', 'Europe/Oslo': 'NO', 'Europe/Paris': 'FR', 'Europe/Podgorica': 'ME',
  'Europe/Prague': 'CZ', 'Europe/Riga': 'LV', 'Europe/Rome': 'IT', 'Europe/Samara': 'RU', 'Europe/San_Marino': 'SM',
  'Europe/Sarajevo': 'BA', 'Europe/Saratov': 'RU', 'Europe/Simferopol': 'UA', 'Europe/Skopje': 'MK', 'Europe/Sofia': 'BG',
  'Europe/Stockholm': 'SE', 'Europe/Tallinn': 'EE', 'Europe/Tirane': 'AL', 'Europe/Ulyanovsk': 'RU', 'Europe/Vaduz': 'LI',
  'Europe/Vatican': 'VA', 'Europe/Vienna': 'AT', 'Europe/Vilnius': 'LT', 'Europe/Volgograd': 'RU', 'Europe/Warsaw': 'PL',
  'Europe/Zagreb': 'HR', 'Europe/Zurich': 'CH', 'Atlantic/Reykjavik': 'IS', 'Atlantic/Faroe': 'FO', 'Atlantic/Canary': 'ES',
  'Atlantic/Madeira': 'PT', 'Atlantic/Azores': 'PT', 'Asia/Nicosia': 'CY', 'Europe/Nicosia': 'CY', 'Asia/Famagusta': 'CY',
  // Americas
  'America/New_York': 'US', 'America/Chicago': 'US', 'America/Denver': 'US', 'America/Los_Angeles': 'US', 'America/Phoenix': 'US',
  'America/Anchorage': 'US', 'America/Juneau': 'US', 'America/Boise': 'US', 'America/Detroit': 'US', 'America/Indiana/Indianapolis': 'US',
  'America/Kentucky/Louisville': 'US', 'America/Adak': 'US', 'America/Nome': 'US', 'America/Sitka': 'US', 'America/Menominee': 'US',
  'America/North_Dakota/Center': 'US', 'Pacific/Honolulu': 'US', 'US/Eastern': 'US', 'US/Central': 'US', 'US/Mountain': 'US',
  'US/Pacific': 'US', 'US/Alaska': 'US', 'US/Hawaii': 'US', 'US/Arizona': 'US',
  'America/Toronto': 'CA', 'America/Vancouver': 'CA', 'America/Edmonton': 'CA', 'America/Winnipeg': 'CA', 'America/Halifax': 'CA',
  'America/St_Johns': 'CA', 'America/Regina': 'CA', 'America/Montreal': 'CA', 'America/Moncton': 'CA', 'America/Whitehorse': 'CA',
  'America/Yellowknife': 'CA', 'America/Iqaluit': 'CA', 'Canada/Eastern': 'CA', 'Canada/Pacific': 'CA', 'Canada/Central': 'CA',
  'Canada/Mountain': 'CA', 'Canada/Atlantic': 'CA',
  'America/Mexico_City': 'MX', 'America/Cancun': 'MX', 'America/Monterrey': 'MX', 'America/Tijuana': 'MX', 'America/Merida': 'MX',
  'America/Chihuahua': 'MX', 'America/Hermosillo': 'MX', 'America/Mazatlan': 'MX',
  'America/Sao_Paulo': 'BR', 'America/Manaus': 'BR', 'America/Fortaleza': 'BR', 'America/Recife': 'BR', 'America/Bahia': 'BR',
  'America/Belem': 'BR', 'America/Cuiaba': 'BR', 'America/Porto_Velho': 'BR', 'America/Rio_Branco': 'BR', 'America/Noronha': 'BR',
  'America/Argentina/Buenos_Aires': 'AR', 'America/Buenos_Aires': 'AR', 'America/Argentina/Cordoba': 'AR', 'America/Argentina/Mendoza': 'AR',
  'America/Santiago': 'CL', 'Pacific/Easter': 'CL', 'America/Bogota': 'CO', 'America/Lima': 'PE', 'America/Caracas': 'VE',
  'America/Guayaquil': 'EC', 'Pacific/Galapagos': 'EC', 'America/La_Paz': 'BO', 'America/Asuncion': 'PY', 'America/Montevideo': 'UY',
  'America/Guatemala': 'GT', 'America/Costa_Rica': 'CR', 'America/Panama': 'PA', 'America/El_Salvador': 'SV', 'America/Tegucigalpa': 'HN',
  'America/Managua': 'NI', 'America/Havana': 'CU', 'America/Santo_Domingo': 'DO', 'America/Puerto_Rico': 'PR', 'America/Jamaica': 'JM',
  'America/Port-au-Prince': 'HT', 'America/Port_of_Spain': 'TT', 'America/Barbados': 'BB', 'America/Nassau': 'BS', 'America/Belize': 'BZ',
  'America/Paramaribo': 'SR', 'America/Guyana': 'GY', 'America/Cayenne': 'GF', 'America/Martinique': 'MQ', 'America/Guadeloupe': 'GP',
  'America/Curacao': 'CW', 'America/Aruba': 'AW', 'Atlantic/Bermuda': 'BM', 'America/Nuuk': 'GL', 'America/Godthab': 'GL',
  // Asia
  'Asia/Tokyo': 'JP', 'Asia/Seoul': 'KR', 'Asia/Pyongyang': 'KP', 'Asia/Shanghai': 'CN', 'Asia/Chongqing': 'CN', 'Asia/Harbin': 'CN',
  'Asia/Urumqi': 'CN', 'Asia/Hong_Kong': 'HK', 'Asia/Macau': 'MO', 'Asia/Taipei': 'TW', 'Asia/Singapore': 'SG', 'Asia/Kuala_Lumpur': 'MY',
  'Asia/Kuching': 'MY', 'Asia/Bangkok': 'TH', 'Asia/Ho_Chi_Minh': 'VN', 'Asia/Saigon': 'VN', 'Asia/Jakarta': 'ID', 'Asia/Makassar': 'ID',
  'Asia/Jayapura': 'ID', 'Asia/Pontianak': 'ID', 'Asia/Manila': 'PH', 'Asia/Phnom_Penh': 'KH', 'Asia/Vientiane': 'LA', 'Asia/Yangon': 'MM',
  'Asia/Rangoon': 'MM', 'Asia/Brunei': 'BN', 'Asia/Dili': 'TL', 'Asia/Kolkata': 'IN', 'Asia/Calcutta': 'IN', 'Asia/Karachi': 'PK',
  'Asia/Dhaka': 'BD', 'Asia/Kathmandu': 'NP', 'Asia/Katmandu': 'NP', 'Asia/Colombo': 'LK', 'Asia/Thimphu': 'BT', 'Indian/Maldives': 'MV',
  'Asia/Kabul': 'AF', 'Asia/Tehran': 'IR', 'Asia/Baghdad': 'IQ', 'Asia/Riyadh': 'SA', 'Asia/Dubai': 'AE', 'Asia/Qatar': 'QA',
  'Asia/Bahrain': 'BH', 'Asia/Kuwait': 'KW', 'Asia/Muscat': 'OM', 'Asia/Aden': 'YE', 'Asia/Amman': 'JO', 'Asia/Beirut': 'LB',
  'Asia/Damascus': 'SY', 'Asia/Jerusalem': 'IL', 'Asia/Tel_Aviv': 'IL', 'Asia/Gaza': 'PS', 'Asia/Hebron': 'PS', 'Asia/Baku': 'AZ',
  'Asia/Tbilisi': 'GE', 'Asia/Yerevan': 'AM', 'Asia/Almaty': 'KZ', 'Asia/Qostanay': 'KZ', 'Asia/Aqtobe': 'KZ', 'Asia/Aqtau': 'KZ',
  'Asia/Tashkent': 'UZ', 'Asia/Samarkand': 'UZ', 'Asia/Bishkek': 'KG', 'Asia/Dushanbe': 'TJ', 'Asia/Ashgabat': 'TM',
  'Asia/Ulaanbaatar': 'MN', 'Asia/Novosibirsk': 'RU', 'Asia/Yekaterinburg': 'RU', 'Asia/Omsk': 'RU', 'Asia/Krasnoyarsk': 'RU',
  'Asia/Irkutsk': 'RU', 'Asia/Yakutsk': 'RU', 'Asia/Vladivostok': 'RU', 'Asia/Magadan': 'RU', 'Asia/Kamchatka': 'RU',
  // Africa
  'Africa/Cairo': 'EG', 'Africa/Johannesburg': 'ZA', 'Africa/Lagos': 'NG', 'Africa/Nairobi': 'KE', 'Africa/Casablanca': 'MA',
  'Africa/Algiers': 'DZ', 'Africa/Tunis': 'TN', 'Africa/Tripoli': 'LY', 'Africa/Accra': 'GH', 'Africa/Abidjan': 'CI', 'Africa/Dakar': 'SN',
  'Africa/Addis_Ababa': 'ET', 'Africa/Dar_es_Salaam': 'TZ', 'Africa/Kampala': 'UG', 'Africa/Kigali': 'RW', 'Africa/Khartoum': 'SD',
  'Africa/Kinshasa': 'CD', 'Africa/Lubumbashi': 'CD', 'Africa/Luanda': 'AO', 'Africa/Maputo': 'MZ', 'Africa/Harare': 'ZW',
  'Africa/Lusaka': 'ZM', 'Africa/Windhoek': 'NA', 'Africa/Gaborone': 'BW', 'Africa/Douala': 'CM', 'Africa/Bamako': 'ML',
  'Indian/Mauritius': 'MU', 'Indian/Reunion': 'RE', 'Indian/Antananarivo': 'MG',
  // Oceania
  'Australia/Sydney': 'AU', 'Australia/Melbourne': 'AU', 'Australia/Brisbane': 'AU', 'Australia/Perth': 'AU', 'Australia/Adelaide': 'AU',
  'Australia/Hobart': 'AU', 'Australia/Darwin': 'AU', 'Australia/Canberra': 'AU', 'Australia/Lord_Howe': 'AU', 'Australia/Eucla': 'AU',
  'Pacific/Auckland': 'NZ', 'Pacific/Chatham': 'NZ', 'Pacific/Fiji': 'FJ', 'Pacific/Guam': 'GU', 'Pacific/Port_Moresby': 'PG',
  'Pacific/Noumea': 'NC', 'Pacific/Tahiti': 'PF', 'Pacific/Apia': 'WS', 'Pacific/Tongatapu': 'TO',
};

export const UNKNOWN_COUNTRY = 'XX';

/** ISO 3166-1 alpha-2 country code for an IANA time zone, or "XX". */
export function countryFromTimeZone(timeZone: string | undefined | null): string {
  if (!timeZone) return UNKNOWN_COUNTRY;
  return ZONES[timeZone] ?? UNKNOWN_COUNTRY;
}
