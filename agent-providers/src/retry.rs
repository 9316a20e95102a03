//! When to retry, and how long to wait: exponential backoff with full jitter, bounded, with the
//! provider's `Retry-After` (seconds or an HTTP date) and `retry-after-ms` taking precedence.

use std::cell::Cell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agent_core::{ModelError, ModelErrorKind};
use reqwest::header::HeaderMap;

use crate::config::HttpSettings;

/// Whether an HTTP status is worth retrying: 408, 409, 429 and 5xx (529 included).
pub(crate) fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || (500..600).contains(&status)
}

/// Whether a failure is transient: the request may succeed if made again.
pub(crate) fn retryable(error: &ModelError) -> bool {
    match error.kind {
        ModelErrorKind::Transport
        | ModelErrorKind::Timeout
        | ModelErrorKind::Disconnected
        | ModelErrorKind::StreamTruncated
        | ModelErrorKind::StreamMalformed
        | ModelErrorKind::Server
        | ModelErrorKind::RateLimited => true,
        _ => error.status.is_some_and(retryable_status),
    }
}

/// The delay the provider asked for: `retry-after-ms`, or `Retry-After` in seconds or as an
/// HTTP date. Whatever a server sends is safe: a delay too large for a `Duration` (`inf`,
/// `1e30`) is `Duration::MAX`, which [`backoff`] caps at `max_backoff`; a negative or
/// not-a-number value is ignored.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && let Some(delay) = seconds(ms / 1000.0)
    {
        return Some(delay);
    }
    let value = text("retry-after")?;
    if let Ok(number) = value.parse::<f64>() {
        return seconds(number);
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// A number of seconds from a server as a delay: `None` when negative or not a number, and
/// `Duration::MAX` when too large to represent.
fn seconds(value: f64) -> Option<Duration> {
    if value.is_nan() || value < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(value).unwrap_or(Duration::MAX))
}

/// How long to wait before retry number `attempt` (1-based): the provider's delay when it gave
/// one (capped at `max_backoff`), else a random delay in `[0, min(max, initial * 2^(attempt-1))]`.
pub(crate) fn backoff(settings: &HttpSettings, attempt: u32, asked: Option<Duration>) -> Duration {
    if let Some(asked) = asked {
        return asked.min(settings.max_backoff);
    }
    let ceiling = settings
        .initial_backoff
        .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)))
        .min(settings.max_backoff);
    ceiling.mul_f64(random_unit())
}

/// A number in `[0, 1)` from a per-thread xorshift generator seeded by the clock: jitter needs
/// spread, not cryptographic quality.
fn random_unit() -> f64 {
    thread_local! {
        static STATE: Cell<u64> = Cell::new(
            SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0x9e37_79b9_7f4a_7c15) | 1,
        );
    }
    STATE.with(|state| {
        let mut x = state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_reads_milliseconds_seconds_and_http_dates() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut dated = HeaderMap::new();
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
        dated.insert("retry-after", HeaderValue::from_str(&later).unwrap());
        let delay = retry_after(&dated).unwrap();
        assert!(
            delay > Duration::from_secs(100) && delay <= Duration::from_secs(120),
            "{delay:?}"
        );
        let mut past = HeaderMap::new();
        past.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&past), Some(Duration::ZERO));
        let mut junk = HeaderMap::new();
        junk.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&junk), None);
    }

    #[test]
    fn hostile_retry_after_values_never_panic_and_are_capped() {
        let settings = HttpSettings::default();
        let huge = [
            "inf",
            "Infinity",
            "1e30",
            "1e308",
            "18446744073709551616",
            "9e18",
        ];
        for name in ["retry-after", "retry-after-ms"] {
            for value in huge {
                let mut headers = HeaderMap::new();
                headers.insert(name, HeaderValue::from_static(value));
                let asked = retry_after(&headers);
                assert_eq!(
                    backoff(&settings, 1, asked),
                    settings.max_backoff,
                    "{name}: {value}"
                );
            }
            for ignored in ["NaN", "-1", "-inf", "", "1e", "0x10"] {
                let mut headers = HeaderMap::new();
                headers.insert(name, HeaderValue::from_static(ignored));
                assert_eq!(retry_after(&headers), None, "{name}: {ignored:?}");
            }
        }
        let mut headers = HeaderMap::new();
        headers.insert("retry-after-ms", HeaderValue::from_static("NaN"));
        headers.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
    }

    #[test]
    fn backoff_is_bounded_jittered_and_honours_the_provider() {
        let settings = HttpSettings::default();
        for attempt in 1..10 {
            let ceiling = settings.initial_backoff * 2u32.pow(attempt - 1);
            let delay = backoff(&settings, attempt, None);
            assert!(
                delay <= ceiling.min(settings.max_backoff),
                "attempt {attempt}: {delay:?}"
            );
        }
        assert_eq!(
            backoff(&settings, 1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            backoff(&settings, 1, Some(Duration::from_secs(3600))),
            settings.max_backoff
        );
        let spread: std::collections::BTreeSet<u128> = (0..20)
            .map(|_| backoff(&settings, 3, None).as_micros())
            .collect();
        assert!(
            spread.len() > 10,
            "full jitter spreads the delays: {spread:?}"
        );
    }

    #[test]
    fn which_statuses_are_retried() {
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 422] {
            assert!(!retryable_status(status), "{status}");
        }
    }
}
