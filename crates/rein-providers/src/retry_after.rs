//! How long a service asks us to wait: `retry-after-ms`, then `retry-after`
//! as seconds or as an HTTP date.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The wait a response's headers ask for, if any. `headers` yields
/// (lower-case name, value) pairs.
pub fn parse<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    now: SystemTime,
) -> Option<Duration> {
    let mut ms = None;
    let mut plain = None;
    for (name, value) in headers {
        match name {
            "retry-after-ms" => ms = value.trim().parse::<f64>().ok(),
            "retry-after" => plain = Some(value.trim().to_string()),
            _ => {}
        }
    }
    if let Some(ms) = ms.filter(|m| m.is_finite() && *m >= 0.0) {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let plain = plain?;
    if let Ok(secs) = plain.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = http_date(&plain)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs() as i64;
    Some(Duration::from_secs(at.saturating_sub(now).max(0) as u64))
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Unix seconds of an IMF-fixdate such as `Wed, 21 Oct 2015 07:28:00 GMT`.
fn http_date(s: &str) -> Option<i64> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_, day, month, year, time, _] = parts.as_slice() else {
        return None;
    };
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let m = months.iter().position(|x| x == month)? as i64 + 1;
    let (d, y): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, mi, se] = hms.as_slice() else {
        return None;
    };
    Some(days_from_civil(y, m, d) * 86_400 + h * 3600 + mi * 60 + se)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn milliseconds_win_over_seconds() {
        let h = [("retry-after", "30"), ("retry-after-ms", "1500")];
        assert_eq!(parse(h, at(0)), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn seconds_and_fractions_are_read() {
        assert_eq!(
            parse([("retry-after", "7")], at(0)),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse([("retry-after", "0.5")], at(0)),
            Some(Duration::from_millis(500))
        );
        assert_eq!(parse([("retry-after", "-3")], at(0)), None);
        assert_eq!(parse([("x", "1")], at(0)), None);
    }

    #[test]
    fn http_dates_become_a_wait_from_now() {
        // 2015-10-21T07:28:00Z is 1445412480.
        let h = [("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")];
        assert_eq!(parse(h, at(1_445_412_470)), Some(Duration::from_secs(10)));
        assert_eq!(parse(h, at(1_445_412_490)), Some(Duration::ZERO));
        assert_eq!(parse([("retry-after", "soon")], at(0)), None);
    }
}
