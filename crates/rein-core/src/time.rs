//! Wall-clock helpers without a date library.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// (year, month, day) of a day count since 1970-01-01 (proleptic Gregorian).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `YYYY-MM-DD` (UTC) of a Unix-millisecond time.
pub fn format_date(millis: i64) -> String {
    let (y, m, d) = civil_from_days(millis.div_euclid(86_400_000));
    format!("{y:04}-{m:02}-{d:02}")
}

/// `YYYY-MM-DD HH:MM` (UTC) of a Unix-millisecond time.
pub fn format_datetime(millis: i64) -> String {
    let secs = millis.div_euclid(1000);
    let (h, min) = (secs.rem_euclid(86_400) / 3600, secs.rem_euclid(3600) / 60);
    format!("{} {h:02}:{min:02}", format_date(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_format_in_utc() {
        assert_eq!(format_date(0), "1970-01-01");
        // 2026-12-02T13:52:25Z
        assert_eq!(format_datetime(1_796_219_545_000), "2026-12-02 13:52");
        assert_eq!(format_date(951_782_400_000), "2000-02-29");
    }
}
