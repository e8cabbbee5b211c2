//! Python's `str(datetime)` (`YYYY-MM-DD HH:MM:SS.ffffff`, UTC) for a Unix time: how
//! Scrapy's stats print `start_time` and `finish_time`; and `datetime.isoformat()` of a
//! UTC time (`YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00`), which feed URIs' `%(time)s` and
//! `%(batch_time)s` are made from.

use crate::proto::date::civil_from_days;

/// The current time, formatted by [`format_utc`].
pub fn wall_clock_iso() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    format_utc(now)
}

/// `YYYY-MM-DD HH:MM:SS.ffffff` (UTC) for a Unix time.
pub fn format_utc(unix: f64) -> String {
    let secs = unix.floor() as i64;
    let micros = ((unix - unix.floor()) * 1e6) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{micros:06}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Python's `datetime.isoformat()` of the UTC time `unix_micros` (microseconds since
/// the Unix epoch): `YYYY-MM-DDTHH:MM:SS+00:00`, with `.ffffff` before the offset when
/// the microseconds are not 0.
pub fn isoformat_utc(unix_micros: i64) -> String {
    let secs = unix_micros.div_euclid(1_000_000);
    let micros = unix_micros.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let fraction = if micros == 0 {
        String::new()
    } else {
        format!(".{micros:06}")
    };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{fraction}+00:00",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {

    #[test]
    fn utc_formatting() {
        assert_eq!(super::format_utc(0.0), "1970-01-01 00:00:00.000000");
        assert_eq!(
            super::format_utc(1_700_000_000.5),
            "2023-11-14 22:13:20.500000"
        );
    }
}
