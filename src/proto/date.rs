//! HTTP dates (RFC 9110 §5.6.7), sans-IO: the IMF-fixdate format
//! (`Sun, 06 Nov 1994 08:49:37 GMT`) both ways, and the two obsolete formats (RFC 850
//! and asctime) when parsing. Times are UNIX seconds.

const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date `(year, month, day)` of a count of days since 1970-01-01 (Howard
/// Hinnant's algorithm).
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Formats UNIX seconds as an IMF-fixdate.
pub fn format_http_date(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{}, {d:02} {} {y:04} {:02}:{:02}:{:02} GMT",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn month(s: &str) -> Option<i64> {
    MONTHS
        .iter()
        .position(|m| m.eq_ignore_ascii_case(s))
        .map(|i| i as i64 + 1)
}

fn hms(s: &str) -> Option<i64> {
    let mut it = s.split(':');
    let h: i64 = it.next()?.parse().ok()?;
    let m: i64 = it.next()?.parse().ok()?;
    let sec: i64 = it.next()?.parse().ok()?;
    if it.next().is_some() || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    Some(h * 3600 + m * 60 + sec)
}

fn valid(y: i64, m: i64, d: i64) -> bool {
    (1..=12).contains(&m) && (1..=31).contains(&d) && y >= 1
}

/// Parses an HTTP date in any of the three formats into UNIX seconds; `None` for
/// anything else (callers treat an unparsable `Expires` as "already expired").
pub fn parse_http_date(s: &str) -> Option<i64> {
    let s = s.trim();
    let parts: Vec<&str> = s.split_ascii_whitespace().collect();
    let (y, m, d, t) = match parts.as_slice() {
        // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        [_, d, mon, y, t, "GMT"] => (y.parse().ok()?, month(mon)?, d.parse().ok()?, hms(t)?),
        // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
        [_, date, t, "GMT"] => {
            let mut it = date.split('-');
            let d: i64 = it.next()?.parse().ok()?;
            let m = month(it.next()?)?;
            let y: i64 = it.next()?.parse().ok()?;
            let y = if y < 100 {
                if y < 70 { 2000 + y } else { 1900 + y }
            } else {
                y
            };
            (y, m, d, hms(t)?)
        }
        // asctime: Sun Nov  6 08:49:37 1994
        [_, mon, d, t, y] => (y.parse().ok()?, month(mon)?, d.parse().ok()?, hms(t)?),
        _ => return None,
    };
    if !valid(y, m, d) {
        return None;
    }
    Some(days_from_civil(y, m, d) * 86_400 + t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_formats() {
        let t = 784_111_777;
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(t));
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), Some(t));
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994"), Some(t));
        assert_eq!(format_http_date(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(format_http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    }

    #[test]
    fn round_trips_and_rejects_garbage() {
        for t in [0, 86_399, 951_782_400, 1_700_000_000, 4_102_444_800] {
            assert_eq!(parse_http_date(&format_http_date(t)), Some(t), "{t}");
        }
        for bad in [
            "",
            "0",
            "-1",
            "yesterday",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:00:00 GMT",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad:?}");
        }
    }
}
