//! Wake schedules: a cron expression (crate `croner`: five fields, or six with seconds
//! first) evaluated in an IANA time zone (crate `jiff`, with its bundled time-zone
//! database so the answer does not depend on the machine's tzdata), targets (host ids
//! and/or MACs), an enabled flag, and what happened last.
//!
//! When a schedule is due is decided by one pure function, [`due`], over an injectable
//! clock's "now": a slot fires when it is later than the last slot handled (stored in the
//! schedule as `last_slot`, so a slot is never fired twice, even across restarts) and not
//! earlier than the scheduler's start. Slots that passed while the server was down (after
//! the last handled one, before the start) are reported as missed, never fired late.

use std::str::FromStr;

use croner::Cron;
use jiff::{tz::TimeZone, Timestamp};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use bootlane_core::{
    net::types::normalise_mac,
    service_error::{short_text, ServiceError},
};

/// Most schedules kept (a create beyond it is a 409).
pub const MAX_SCHEDULES: usize = 100;
/// Most targets (host ids plus MACs) per schedule.
pub const MAX_TARGETS: usize = 1000;
/// Missed slots are counted up to this many per check (a schedule every second that was
/// down for a week reports "at least 10000").
const MISSED_COUNT_CAP: u64 = 10_000;

/// A stored schedule.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WolSchedule {
    /// Id.
    pub id: u64,
    /// Name (free text, 1-64 bytes).
    pub name: String,
    /// Cron expression as given.
    pub cron: String,
    /// IANA time zone name the expression is read in.
    pub timezone: String,
    /// Registered hosts to wake (by id; a host deleted later is reported at run time).
    pub host_ids: Vec<u64>,
    /// Further MACs to wake, lower-case colon form.
    pub macs: Vec<String>,
    /// Only enabled schedules fire.
    pub enabled: bool,
    /// Creation time: slots at or before it are not due.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The last slot handled (fired or reported missed), Unix seconds.
    pub last_slot: Option<i64>,
    /// When it last fired.
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_run: Option<OffsetDateTime>,
    /// `ok`, `partial`, `failed` or `missed`.
    pub last_status: Option<String>,
    /// What went wrong last, if anything.
    pub last_error: Option<String>,
    /// Slots missed in all (server down).
    pub missed: u64,
}

bootlane_core::store::entity!(WolSchedule, "wol_schedules");

/// Body of `POST /wol/schedule`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleInput {
    /// Name, 1-64 bytes of text.
    pub name: String,
    /// Cron expression: `min hour day month weekday` (e.g. `30 6 * * 1-5`), or six fields
    /// with seconds first; names (`MON`, `JAN`) and `@daily`-style nicknames are accepted.
    pub cron: String,
    /// IANA time zone, e.g. `Europe/Berlin`. Default `UTC`.
    pub timezone: Option<String>,
    /// Host ids to wake (each must exist).
    #[serde(default)]
    pub host_ids: Vec<u64>,
    /// MACs to wake (any MAC form).
    #[serde(default)]
    pub macs: Vec<String>,
    /// Default true.
    pub enabled: Option<bool>,
}

/// A schedule as the API shows it (`GET /wol/schedules`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ScheduleView {
    /// Id.
    pub id: u64,
    /// Name.
    pub name: String,
    /// Cron expression.
    pub cron: String,
    /// IANA time zone.
    pub timezone: String,
    /// Host ids to wake.
    pub host_ids: Vec<u64>,
    /// MACs to wake.
    pub macs: Vec<String>,
    /// Whether it fires.
    pub enabled: bool,
    /// Creation time, RFC 3339.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// When it last fired, RFC 3339.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_run: Option<OffsetDateTime>,
    /// `ok` (every target sent), `partial`, `failed` or `missed` (the server was down).
    pub last_status: Option<String>,
    /// What went wrong last.
    pub last_error: Option<String>,
    /// Slots missed in all while the server was down.
    pub missed: u64,
    /// The next slot, RFC 3339 in the schedule's zone; `null` when disabled or never again.
    pub next_run: Option<String>,
}

impl ScheduleView {
    /// The view of `s` with its next slot after `now`.
    pub fn new(s: &WolSchedule, now: Timestamp) -> Self {
        let next_run = if s.enabled {
            parse(&s.cron, &s.timezone)
                .ok()
                .and_then(|(c, tz)| c.find_next_occurrence(&now.to_zoned(tz), false).ok())
                .map(|z| z.timestamp().display_with_offset(z.offset()).to_string())
        } else {
            None
        };
        Self {
            id: s.id,
            name: s.name.clone(),
            cron: s.cron.clone(),
            timezone: s.timezone.clone(),
            host_ids: s.host_ids.clone(),
            macs: s.macs.clone(),
            enabled: s.enabled,
            created_at: s.created_at,
            last_run: s.last_run,
            last_status: s.last_status.clone(),
            last_error: s.last_error.clone(),
            missed: s.missed,
            next_run,
        }
    }
}

/// Parses a cron expression and a time zone.
///
/// # Errors
/// A message naming `cron` or `timezone`.
pub fn parse(cron: &str, timezone: &str) -> Result<(Cron, TimeZone), String> {
    let c = Cron::from_str(cron.trim()).map_err(|e| format!("'cron' is not a valid cron expression: {e}"))?;
    let tz = TimeZone::get(timezone)
        .map_err(|_| format!("'timezone' {timezone:?} is not a known IANA time zone (e.g. UTC, Europe/Berlin)"))?;
    Ok((c, tz))
}

/// Checks `input` and builds the schedule (id 0 until stored), created at `now`.
/// Host ids are checked by the caller (they need the host table).
///
/// # Errors
/// [`ServiceError::Invalid`] naming the field.
pub fn build(input: ScheduleInput, now: Timestamp) -> Result<WolSchedule, ServiceError> {
    let inv = ServiceError::Invalid;
    let name = short_text("name", input.name.trim(), 64)?;
    if name.is_empty() {
        return Err(inv("'name' must not be empty".into()));
    }
    let timezone = input.timezone.unwrap_or_else(|| "UTC".into());
    let (cron, tz) = parse(&input.cron, &timezone).map_err(inv)?;
    if cron.find_next_occurrence(&now.to_zoned(tz), false).is_err() {
        return Err(inv(format!("'cron' {:?} never fires", input.cron)));
    }
    if input.host_ids.is_empty() && input.macs.is_empty() {
        return Err(inv("give at least one target in 'host_ids' or 'macs'".into()));
    }
    if input.host_ids.len() + input.macs.len() > MAX_TARGETS {
        return Err(inv(format!(
            "'host_ids' and 'macs' hold at most {MAX_TARGETS} targets together"
        )));
    }
    let mut host_ids = input.host_ids;
    host_ids.sort_unstable();
    host_ids.dedup();
    let mut macs = Vec::new();
    for m in &input.macs {
        let mac = normalise_mac(m).map_err(|e| inv(format!("'macs': {e}")))?.to_string();
        if !macs.contains(&mac) {
            macs.push(mac);
        }
    }
    Ok(WolSchedule {
        id: 0,
        name,
        cron: input.cron.trim().to_string(),
        timezone,
        host_ids,
        macs,
        enabled: input.enabled.unwrap_or(true),
        created_at: to_time(now),
        last_slot: None,
        last_run: None,
        last_status: None,
        last_error: None,
        missed: 0,
    })
}

/// What a schedule should do at a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Nothing is due.
    Nothing,
    /// Fire the slot at this Unix second.
    Fire(i64),
    /// `count` slots (the last at this Unix second) passed before the scheduler started:
    /// record them as missed.
    Missed {
        /// The last missed slot, Unix seconds.
        last: i64,
        /// How many (capped at 10000).
        count: u64,
    },
}

/// Decides what `s` does at `now`, for a scheduler that started at `started`. Pure.
/// Slots after `last_slot` (or after creation) count; those before `started` are missed,
/// the latest one at or before `now` otherwise fires. Disabled or unparsable schedules
/// do nothing.
pub fn due(s: &WolSchedule, started: Timestamp, now: Timestamp) -> Due {
    if !s.enabled {
        return Due::Nothing;
    }
    let Ok((cron, tz)) = parse(&s.cron, &s.timezone) else {
        return Due::Nothing;
    };
    let baseline = s.last_slot.unwrap_or(s.created_at.unix_timestamp());
    let Ok(base) = Timestamp::from_second(baseline) else {
        return Due::Nothing;
    };
    // Slots in (baseline, started) were missed while the server was down.
    let mut missed = 0;
    let mut last_missed = None;
    let mut at = base.to_zoned(tz.clone());
    while missed < MISSED_COUNT_CAP {
        match cron.find_next_occurrence(&at, false) {
            Ok(next) if next.timestamp() < started && next.timestamp() <= now => {
                missed += 1;
                last_missed = Some(next.timestamp().as_second());
                at = next;
            }
            _ => break,
        }
    }
    if let Some(mut last) = last_missed {
        if missed == MISSED_COUNT_CAP {
            // Too many to count: skip to the last slot before the start.
            if let Ok(z) = cron.find_previous_occurrence(&started.to_zoned(tz), false) {
                last = last.max(z.timestamp().as_second());
            }
        }
        return Due::Missed { last, count: missed };
    }
    match cron.find_previous_occurrence(&now.to_zoned(tz), true) {
        Ok(slot) if slot.timestamp().as_second() > baseline => Due::Fire(slot.timestamp().as_second()),
        _ => Due::Nothing,
    }
}

/// `time` value of a `jiff` timestamp (second precision).
pub fn to_time(t: Timestamp) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(t.as_second()).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn sched(cron: &str, tz: &str, created: &str) -> WolSchedule {
        build(
            ScheduleInput {
                name: "rack".into(),
                cron: cron.into(),
                timezone: Some(tz.into()),
                macs: vec!["52:54:00:00:00:01".into()],
                ..Default::default()
            },
            ts(created),
        )
        .unwrap()
    }

    fn err(input: ScheduleInput) -> String {
        match build(input, ts("2026-01-01T00:00:00Z")) {
            Err(ServiceError::Invalid(m)) => m,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn validation_names_the_field() {
        let ok = || ScheduleInput {
            name: "n".into(),
            cron: "0 6 * * *".into(),
            macs: vec!["52:54:00:00:00:01".into()],
            ..Default::default()
        };
        assert!(err(ScheduleInput {
            cron: "61 * * * *".into(),
            ..ok()
        })
        .contains("'cron'"));
        assert!(err(ScheduleInput {
            cron: "0 0 30 2 *".into(),
            ..ok()
        })
        .contains("'cron'"));
        assert!(err(ScheduleInput {
            timezone: Some("Mars/Olympus".into()),
            ..ok()
        })
        .contains("'timezone'"));
        assert!(err(ScheduleInput {
            name: " ".into(),
            ..ok()
        })
        .contains("'name'"));
        assert!(err(ScheduleInput { macs: vec![], ..ok() }).contains("'macs'"));
        assert!(err(ScheduleInput {
            macs: vec!["zz".into()],
            ..ok()
        })
        .contains("'macs'"));
        let s = build(
            ScheduleInput {
                macs: vec!["52-54-00-00-00-01".into(), "525400000001".into()],
                ..ok()
            },
            ts("2026-01-01T00:00:00Z"),
        )
        .unwrap();
        assert_eq!(s.macs, ["52:54:00:00:00:01"]);
        assert_eq!(s.timezone, "UTC");
        assert!(s.enabled);
    }

    #[test]
    fn fires_each_slot_once_in_its_time_zone() {
        // 06:30 in Berlin is 05:30 UTC in winter.
        let mut s = sched("30 6 * * *", "Europe/Berlin", "2026-01-10T00:00:00Z");
        let started = ts("2026-01-10T00:00:00Z");
        assert_eq!(due(&s, started, ts("2026-01-10T05:29:59Z")), Due::Nothing);
        let slot = ts("2026-01-10T05:30:00Z").as_second();
        assert_eq!(due(&s, started, ts("2026-01-10T05:30:00Z")), Due::Fire(slot));
        // A late check (a busy machine) still fires the slot, once.
        assert_eq!(due(&s, started, ts("2026-01-10T05:30:07Z")), Due::Fire(slot));
        s.last_slot = Some(slot);
        assert_eq!(due(&s, started, ts("2026-01-10T05:30:08Z")), Due::Nothing);
        assert_eq!(due(&s, started, ts("2026-01-11T05:29:00Z")), Due::Nothing);
        assert_eq!(
            due(&s, started, ts("2026-01-11T05:30:00Z")),
            Due::Fire(ts("2026-01-11T05:30:00Z").as_second())
        );
        // Summer time: 06:30 Berlin is 04:30 UTC.
        s.last_slot = Some(ts("2026-07-01T00:00:00Z").as_second());
        assert_eq!(
            due(&s, started, ts("2026-07-01T04:30:00Z")),
            Due::Fire(ts("2026-07-01T04:30:00Z").as_second())
        );
    }

    #[test]
    fn slots_while_down_are_missed_not_fired_late() {
        let mut s = sched("0 * * * *", "UTC", "2026-01-10T00:00:00Z");
        s.last_slot = Some(ts("2026-01-10T01:00:00Z").as_second());
        // Down from 01:10 to 04:20: slots 02:00, 03:00 and 04:00 were missed.
        let started = ts("2026-01-10T04:20:00Z");
        let d = due(&s, started, ts("2026-01-10T04:20:01Z"));
        assert_eq!(
            d,
            Due::Missed {
                last: ts("2026-01-10T04:00:00Z").as_second(),
                count: 3
            }
        );
        s.last_slot = Some(ts("2026-01-10T04:00:00Z").as_second());
        assert_eq!(due(&s, started, ts("2026-01-10T04:20:02Z")), Due::Nothing);
        assert_eq!(
            due(&s, started, ts("2026-01-10T05:00:00Z")),
            Due::Fire(ts("2026-01-10T05:00:00Z").as_second())
        );
    }

    #[test]
    fn nothing_before_creation_and_nothing_when_disabled() {
        let mut s = sched("*/5 * * * * *", "UTC", "2026-01-10T00:00:03Z");
        let started = ts("2026-01-09T00:00:00Z");
        assert_eq!(due(&s, started, ts("2026-01-10T00:00:04Z")), Due::Nothing);
        assert_eq!(
            due(&s, started, ts("2026-01-10T00:00:05Z")),
            Due::Fire(ts("2026-01-10T00:00:05Z").as_second())
        );
        s.enabled = false;
        assert_eq!(due(&s, started, ts("2026-01-10T00:00:05Z")), Due::Nothing);
    }

    #[test]
    fn view_shows_the_next_run_in_the_zone() {
        let s = sched("30 6 * * *", "Europe/Berlin", "2026-01-10T00:00:00Z");
        let v = ScheduleView::new(&s, ts("2026-01-10T12:00:00Z"));
        assert_eq!(v.next_run.as_deref(), Some("2026-01-11T06:30:00+01:00"));
        let off = WolSchedule { enabled: false, ..s };
        assert_eq!(ScheduleView::new(&off, ts("2026-01-10T12:00:00Z")).next_run, None);
    }
}
