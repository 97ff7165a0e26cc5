//! The epochs and encodings exports use for time, converted to UTC.

use chrono::{DateTime, TimeZone, Utc};

/// Chrome/WebKit: microseconds since 1601-01-01 UTC. Zero means "never".
pub fn from_webkit_micros(us: i64) -> Option<DateTime<Utc>> {
    const EPOCH_DELTA_US: i64 = 11_644_473_600_000_000;
    if us <= 0 {
        return None;
    }
    DateTime::from_timestamp_micros(us.checked_sub(EPOCH_DELTA_US)?)
}

/// Microseconds since the Unix epoch (Firefox desktop, Takeout Chrome `time_usec`).
pub fn from_unix_micros(us: i64) -> Option<DateTime<Utc>> {
    if us <= 0 {
        return None;
    }
    DateTime::from_timestamp_micros(us)
}

/// Milliseconds since the Unix epoch (Firefox for Android).
pub fn from_unix_millis(ms: i64) -> Option<DateTime<Utc>> {
    if ms <= 0 {
        return None;
    }
    DateTime::from_timestamp_millis(ms)
}

/// Float seconds since the Unix epoch (ChatGPT). `0` and non-finite values mean "unknown".
pub fn from_unix_seconds_f64(s: f64) -> Option<DateTime<Utc>> {
    if !s.is_finite() || s <= 0.0 {
        return None;
    }
    DateTime::from_timestamp_micros((s * 1e6).round() as i64)
}

/// Safari: float seconds since 2001-01-01 UTC (Core Data's reference date).
pub fn from_cocoa_seconds(s: f64) -> Option<DateTime<Utc>> {
    if !s.is_finite() {
        return None;
    }
    let reference = Utc.with_ymd_and_hms(2001, 1, 1, 0, 0, 0).single()?;
    reference.checked_add_signed(chrono::Duration::microseconds((s * 1e6).round() as i64))
}

/// RFC 3339 / ISO-8601 with an offset or `Z`, as Takeout and Claude write it.
pub fn parse_rfc3339(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s.trim())
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs() {
        // 2021-01-01T00:00:00Z in each encoding.
        let want = Utc.with_ymd_and_hms(2021, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(from_webkit_micros(13_253_932_800_000_000), Some(want));
        assert_eq!(from_unix_micros(1_609_459_200_000_000), Some(want));
        assert_eq!(from_unix_millis(1_609_459_200_000), Some(want));
        assert_eq!(from_unix_seconds_f64(1_609_459_200.0), Some(want));
        assert_eq!(from_cocoa_seconds(631_152_000.0), Some(want));
        assert_eq!(parse_rfc3339("2021-01-01T00:00:00.000Z"), Some(want));
        assert_eq!(parse_rfc3339("2021-01-01T01:00:00+01:00"), Some(want));
        assert_eq!(from_webkit_micros(0), None);
        assert_eq!(from_unix_seconds_f64(0.0), None);
        assert_eq!(from_unix_seconds_f64(f64::NAN), None);
    }
}
