//! DMTF Redfish over HTTP(S) with `reqwest`: Basic authentication on every request (no
//! session service needed), the system at `/redfish/v1/Systems/<id>` or the first member of
//! the collection, `ComputerSystem.Reset` with the reset type checked against the BMC's
//! `ResetType@Redfish.AllowableValues` when it lists them, and the boot override as a
//! `PATCH` of `Boot.BootSourceOverrideTarget/Enabled/Mode` sent with `If-Match: <ETag>`
//! when the BMC offers one (retried once on 412 with a fresh ETag). Error answers are read
//! for the Redfish `error.message` / `@Message.ExtendedInfo` text. A client is built per
//! call (the TLS switch and timeout are per BMC) by [`outbound::client_builder`] with the
//! target's `[outbound]` rules; redirects are not followed, so checking the base URL once
//! covers every request of the call. No state.

use std::time::Duration;

use reqwest::{header, Method, StatusCode};
use serde_json::{json, Value};

use super::{
    client::{BmcError, BootDevice, BootReport, BootRequest, Reset, Target},
    model::{Identity, PowerState},
};
use bootlane_core::net::outbound::{self, OutboundConfig};

/// The client of one call to `t`, after its base URL passed the `[outbound]` rules
/// ([`BmcError::Unsupported`], a 400, naming the setting otherwise).
fn client(t: &Target) -> Result<reqwest::Client, BmcError> {
    outbound::checked(&t.outbound, &base(t)).map_err(|e| BmcError::Unsupported(format!("{}: {e}", t.label())))?;
    outbound::client_builder(&t.outbound)
        .timeout(t.timeout)
        .connect_timeout(t.timeout)
        .danger_accept_invalid_certs(!t.verify_tls)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| BmcError::Tool(format!("building the HTTP client: {e}")))
}

fn base(t: &Target) -> String {
    format!("{}://{}", if t.tls { "https" } else { "http" }, t.endpoint())
}

/// The Redfish message of an error answer (`error.@Message.ExtendedInfo[].Message`,
/// else `error.message`), or the start of the body.
fn message(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let ext: Vec<&str> = v["error"]["@Message.ExtendedInfo"]
        .as_array()
        .map(|a| a.iter().filter_map(|m| m["Message"].as_str()).collect())
        .unwrap_or_default();
    if !ext.is_empty() {
        return ext.join("; ");
    }
    if let Some(m) = v["error"]["message"].as_str() {
        return m.to_string();
    }
    body.chars().take(200).collect()
}

fn send_error(t: &Target, e: &reqwest::Error) -> BmcError {
    if e.is_timeout() {
        BmcError::Unreachable(format!("{}: no answer within {} s", t.label(), t.timeout.as_secs()))
    } else if e.is_connect() {
        let tls_hint = if t.tls && t.verify_tls {
            " (a self-signed certificate needs verify_tls: false)"
        } else {
            ""
        };
        BmcError::Unreachable(format!(
            "{}: cannot connect: {}{tls_hint}",
            t.label(),
            outbound::describe(e)
        ))
    } else {
        BmcError::Unreachable(format!("{}: request failed: {}", t.label(), outbound::describe(e)))
    }
}

/// Sends one request; returns the status, the ETag and the body, whatever the status.
async fn send(
    c: &reqwest::Client,
    t: &Target,
    method: Method,
    path: &str,
    body: Option<&Value>,
    if_match: Option<&str>,
) -> Result<(StatusCode, Option<String>, String), BmcError> {
    let mut req = c
        .request(method, format!("{}{path}", base(t)))
        .basic_auth(&t.user, Some(&t.password))
        .header(header::ACCEPT, "application/json");
    if let Some(b) = body {
        req = req.json(b);
    }
    if let Some(e) = if_match {
        req = req.header(header::IF_MATCH, e);
    }
    let resp = req.send().await.map_err(|e| send_error(t, &e))?;
    let status = resp.status();
    let etag = resp
        .headers()
        .get(header::ETAG)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let text = resp.text().await.map_err(|e| send_error(t, &e))?;
    Ok((status, etag, text))
}

/// The error of a non-2xx answer: 401/403 [`BmcError::Auth`], others
/// [`BmcError::Refused`] with the BMC's message.
fn answer_error(t: &Target, method: &Method, path: &str, status: StatusCode, text: &str) -> BmcError {
    let l = t.label();
    match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => BmcError::Auth(format!(
            "{l}: the BMC refused user {:?} ({status}: {}); check the user and password",
            t.user,
            message(text)
        )),
        _ => BmcError::Refused(format!("{l}: {method} {path} answered {status}: {}", message(text))),
    }
}

/// [`send`], with non-2xx answers turned into errors ([`answer_error`]).
async fn call(
    c: &reqwest::Client,
    t: &Target,
    method: Method,
    path: &str,
    body: Option<&Value>,
    if_match: Option<&str>,
) -> Result<(StatusCode, Option<String>, String), BmcError> {
    let (status, etag, text) = send(c, t, method.clone(), path, body, if_match).await?;
    if status.is_success() {
        return Ok((status, etag, text));
    }
    Err(answer_error(t, &method, path, status, &text))
}

async fn get(c: &reqwest::Client, t: &Target, path: &str) -> Result<(Value, Option<String>), BmcError> {
    let (_, etag, text) = call(c, t, Method::GET, path, None, None).await?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| BmcError::Protocol(format!("{}: GET {path} is not JSON ({e})", t.label())))?;
    // Some BMCs put the ETag only in the body.
    let etag = etag.or_else(|| v["@odata.etag"].as_str().map(String::from));
    Ok((v, etag))
}

/// The system's path: `/redfish/v1/Systems/<system_id>`, else the collection's first member.
async fn system_path(c: &reqwest::Client, t: &Target) -> Result<String, BmcError> {
    if let Some(id) = &t.system_id {
        return Ok(format!("/redfish/v1/Systems/{id}"));
    }
    let (v, _) = get(c, t, "/redfish/v1/Systems").await?;
    v["Members"]
        .as_array()
        .and_then(|m| m.first())
        .and_then(|m| m["@odata.id"].as_str())
        .filter(|p| p.starts_with('/'))
        .map(String::from)
        .ok_or_else(|| BmcError::Protocol(format!("{}: /redfish/v1/Systems lists no system", t.label())))
}

async fn system(t: &Target) -> Result<(reqwest::Client, String, Value, Option<String>), BmcError> {
    let c = client(t)?;
    let path = system_path(&c, t).await?;
    let (v, etag) = get(&c, t, &path).await?;
    Ok((c, path, v, etag))
}

/// Reads `PowerState`.
pub fn parse_power(v: &Value) -> PowerState {
    match v["PowerState"].as_str() {
        Some("On") => PowerState::On,
        Some("Off") => PowerState::Off,
        _ => PowerState::Unknown,
    }
}

/// The system's `PowerState`.
pub async fn power_state(t: &Target) -> Result<PowerState, BmcError> {
    let (_, _, v, _) = system(t).await?;
    Ok(parse_power(&v))
}

/// `POST <ComputerSystem.Reset target> {"ResetType": ..}`.
pub async fn reset(t: &Target, r: &Reset) -> Result<(), BmcError> {
    let (c, path, v, _) = system(t).await?;
    let action = &v["Actions"]["#ComputerSystem.Reset"];
    let target = action["target"]
        .as_str()
        .map(String::from)
        .unwrap_or_else(|| format!("{path}/Actions/ComputerSystem.Reset"));
    let kind = r.redfish();
    if let Some(allowed) = action["ResetType@Redfish.AllowableValues"].as_array() {
        let allowed: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
        if !allowed.is_empty() && !allowed.contains(&kind) {
            return Err(BmcError::Unsupported(format!(
                "{}: reset type {kind:?} is not one this BMC accepts ({})",
                t.label(),
                allowed.join(", ")
            )));
        }
    }
    call(&c, t, Method::POST, &target, Some(&json!({ "ResetType": kind })), None)
        .await
        .map(drop)
}

/// `PATCH` the boot override (with `If-Match` when an ETag is offered).
pub async fn set_boot(t: &Target, b: BootRequest) -> Result<(), BmcError> {
    let (c, path, v, etag) = system(t).await?;
    let want = b.device.redfish();
    if let Some(allowed) = v["Boot"]["BootSourceOverrideTarget@Redfish.AllowableValues"].as_array() {
        let allowed: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
        if !allowed.is_empty() && !allowed.contains(&want) {
            return Err(BmcError::Unsupported(format!(
                "{}: boot device {want:?} is not one this BMC offers ({})",
                t.label(),
                allowed.join(", ")
            )));
        }
    }
    let mut boot = json!({
        "BootSourceOverrideTarget": want,
        "BootSourceOverrideEnabled": if b.persistent { "Continuous" } else { "Once" },
    });
    if let Some(uefi) = b.uefi {
        boot["BootSourceOverrideMode"] = json!(if uefi { "UEFI" } else { "Legacy" });
    }
    let body = json!({ "Boot": boot });
    let (status, _, text) = send(&c, t, Method::PATCH, &path, Some(&body), etag.as_deref()).await?;
    if status == StatusCode::PRECONDITION_FAILED {
        // The system changed between our GET and PATCH: one retry with a fresh ETag.
        let (_, etag) = get(&c, t, &path).await?;
        return call(&c, t, Method::PATCH, &path, Some(&body), etag.as_deref())
            .await
            .map(drop);
    }
    if status.is_success() {
        return Ok(());
    }
    Err(answer_error(t, &Method::PATCH, &path, status, &text))
}

/// Reads `Boot` into a [`BootReport`].
pub fn parse_boot(v: &Value) -> BootReport {
    let b = &v["Boot"];
    let target = b["BootSourceOverrideTarget"].as_str().unwrap_or("None").to_string();
    let enabled = b["BootSourceOverrideEnabled"].as_str();
    BootReport {
        device: match target.as_str() {
            "Pxe" => Some(BootDevice::Pxe),
            "Hdd" => Some(BootDevice::Disk),
            "Cd" => Some(BootDevice::Cdrom),
            "BiosSetup" => Some(BootDevice::Bios),
            _ => None,
        },
        target,
        persistent: match enabled {
            Some("Continuous") => Some(true),
            Some("Once") => Some(false),
            _ => None,
        },
        uefi: match b["BootSourceOverrideMode"].as_str() {
            Some("UEFI") => Some(true),
            Some("Legacy") => Some(false),
            _ => None,
        },
        enabled: enabled.map(|e| e != "Disabled"),
    }
}

/// The system's boot override.
pub async fn boot(t: &Target) -> Result<BootReport, BmcError> {
    let (_, _, v, _) = system(t).await?;
    Ok(parse_boot(&v))
}

/// `Manufacturer`, `Model`, `SerialNumber`.
pub async fn identity(t: &Target) -> Result<Identity, BmcError> {
    let (_, _, v, _) = system(t).await?;
    let s = |k: &str| v[k].as_str().map(str::trim).filter(|s| !s.is_empty()).map(String::from);
    Ok(Identity {
        manufacturer: s("Manufacturer"),
        model: s("Model"),
        serial: s("SerialNumber"),
    })
}

/// True when `host:port` serves a Redfish service root at `/redfish/v1` (no credentials
/// needed; certificates are not checked for this look only). A target the `[outbound]`
/// rules of `policy` refuse is not contacted (false).
pub async fn service_root(host: &str, port: u16, tls: bool, timeout: Duration, policy: &OutboundConfig) -> bool {
    let Ok(c) = outbound::client_builder(policy)
        .timeout(timeout)
        .connect_timeout(timeout)
        .danger_accept_invalid_certs(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
    else {
        return false;
    };
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    let url = format!("{}://{host}:{port}/redfish/v1", if tls { "https" } else { "http" });
    let Ok(url) = outbound::checked(policy, &url) else {
        return false;
    };
    match c.get(url).send().await {
        Ok(r) if r.status().is_success() || r.status() == StatusCode::UNAUTHORIZED => {
            r.status() == StatusCode::UNAUTHORIZED
                || r.json::<Value>()
                    .await
                    .is_ok_and(|v| v.get("RedfishVersion").is_some() || v.get("Systems").is_some())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::{
        extract::State,
        http::{HeaderMap, StatusCode as Code},
        routing::{get, post},
        Json, Router,
    };

    use super::*;
    use crate::bmc::model::Protocol;

    /// What the fake Redfish service saw: `(method path, If-Match)`.
    type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

    /// A Redfish service on 127.0.0.1:0 with one system whose ETag changes on every PATCH,
    /// that answers the first PATCH with 412 (as if someone else changed it in between)
    /// and wants Basic `admin:secret`.
    async fn fake_redfish() -> (Target, Seen) {
        #[derive(Clone)]
        struct S {
            seen: Seen,
            etag: Arc<Mutex<u32>>,
            boot: Arc<Mutex<Value>>,
        }
        fn authed(h: &HeaderMap) -> bool {
            // "admin:secret" in base64.
            h.get("authorization").and_then(|v| v.to_str().ok()) == Some("Basic YWRtaW46c2VjcmV0")
        }
        async fn collection(h: HeaderMap) -> (Code, Json<Value>) {
            if !authed(&h) {
                return (
                    Code::UNAUTHORIZED,
                    Json(json!({"error": {"message": "Incorrect username or password"}})),
                );
            }
            (
                Code::OK,
                Json(json!({"Members": [{"@odata.id": "/redfish/v1/Systems/sys1"}]})),
            )
        }
        async fn system(State(s): State<S>, h: HeaderMap) -> (Code, HeaderMap, Json<Value>) {
            s.seen.lock().unwrap().push(("GET system".into(), None));
            let mut out = HeaderMap::new();
            out.insert("etag", format!("\"e{}\"", s.etag.lock().unwrap()).parse().unwrap());
            if !authed(&h) {
                return (Code::UNAUTHORIZED, out, Json(json!({})));
            }
            let body = json!({"PowerState": "Off", "Manufacturer": "Acme", "Model": "X1", "SerialNumber": "S-1",
                "Boot": s.boot.lock().unwrap().clone(),
                "Actions": {"#ComputerSystem.Reset": {"target": "/redfish/v1/Systems/sys1/Actions/ComputerSystem.Reset",
                    "ResetType@Redfish.AllowableValues": ["On", "ForceOff", "ForceRestart"]}}});
            (Code::OK, out, Json(body))
        }
        async fn patch(State(s): State<S>, h: HeaderMap, Json(b): Json<Value>) -> Code {
            let m = h.get("if-match").and_then(|v| v.to_str().ok()).map(String::from);
            s.seen.lock().unwrap().push(("PATCH system".into(), m.clone()));
            let mut e = s.etag.lock().unwrap();
            let first = *e == 1;
            *e += 1;
            if first {
                return Code::PRECONDITION_FAILED;
            }
            if m != Some(format!("\"e{}\"", *e - 1)) {
                return Code::PRECONDITION_FAILED;
            }
            // A PATCH merges: the allowable values stay.
            let mut boot = s.boot.lock().unwrap();
            for (k, v) in b["Boot"].as_object().into_iter().flatten() {
                boot[k] = v.clone();
            }
            Code::NO_CONTENT
        }
        async fn reset(State(s): State<S>, Json(b): Json<Value>) -> Code {
            s.seen
                .lock()
                .unwrap()
                .push((format!("POST reset {}", b["ResetType"]), None));
            Code::NO_CONTENT
        }
        let s = S {
            seen: Seen::default(),
            etag: Arc::new(Mutex::new(1)),
            boot: Arc::new(Mutex::new(
                json!({"BootSourceOverrideTarget": "Hdd", "BootSourceOverrideEnabled": "Disabled",
                "BootSourceOverrideTarget@Redfish.AllowableValues": ["Pxe", "Hdd", "Cd"]}),
            )),
        };
        let app = Router::new()
            .route(
                "/redfish/v1",
                get(|| async { Json(json!({"RedfishVersion": "1.6.0"})) }),
            )
            .route("/redfish/v1/Systems", get(collection))
            .route("/redfish/v1/Systems/sys1", get(system).patch(patch))
            .route("/redfish/v1/Systems/sys1/Actions/ComputerSystem.Reset", post(reset))
            .with_state(s.clone());
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(l, app).await });
        let t = Target {
            protocol: Protocol::Redfish,
            host: "127.0.0.1".into(),
            port,
            tls: false,
            user: "admin".into(),
            password: "secret".into(),
            cipher_suite: 3,
            system_id: None,
            verify_tls: true,
            timeout: Duration::from_secs(5),
            // The fake service is on loopback.
            outbound: OutboundConfig {
                allow_loopback: true,
                ..OutboundConfig::default()
            },
        };
        (t, s.seen)
    }

    #[tokio::test]
    async fn boot_override_uses_if_match_and_retries_a_412_once() {
        let (t, seen) = fake_redfish().await;
        let b = BootRequest {
            device: BootDevice::Pxe,
            persistent: false,
            uefi: Some(true),
        };
        set_boot(&t, b).await.unwrap();
        let patches: Vec<_> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.0 == "PATCH system")
            .cloned()
            .collect();
        assert_eq!(
            patches.iter().map(|p| p.1.as_deref()).collect::<Vec<_>>(),
            [Some("\"e1\""), Some("\"e2\"")],
            "the first PATCH carries the ETag read, the retry the fresh one"
        );
        let r = boot(&t).await.unwrap();
        assert_eq!(
            (r.device, r.persistent, r.uefi),
            (Some(BootDevice::Pxe), Some(false), Some(true))
        );
        // A device the BMC does not offer, a reset type it does not list: 400-class, nothing sent.
        let bios = BootRequest {
            device: BootDevice::Bios,
            ..b
        };
        assert!(matches!(set_boot(&t, bios).await, Err(BmcError::Unsupported(m)) if m.contains("Pxe, Hdd, Cd")));
        assert!(
            matches!(reset(&t, &Reset::Redfish("Nmi".into())).await, Err(BmcError::Unsupported(m)) if m.contains("On, ForceOff, ForceRestart"))
        );
        reset(&t, &Reset::ForceRestart).await.unwrap();
        assert!(seen
            .lock()
            .unwrap()
            .iter()
            .any(|s| s.0 == "POST reset \"ForceRestart\""));
        let id = identity(&t).await.unwrap();
        assert_eq!(
            (id.manufacturer.as_deref(), id.serial.as_deref()),
            (Some("Acme"), Some("S-1"))
        );
        assert_eq!(power_state(&t).await.unwrap(), PowerState::Off);
        // Wrong password: an Auth error with the BMC's words; a closed port: Unreachable.
        let wrong = Target {
            password: "nope".into(),
            ..t.clone()
        };
        assert!(
            matches!(power_state(&wrong).await, Err(BmcError::Auth(m)) if m.contains("Incorrect username or password"))
        );
        let closed = Target { port: 1, ..t.clone() };
        assert!(matches!(power_state(&closed).await, Err(BmcError::Unreachable(_))));
        assert!(!service_root("127.0.0.1", 1, false, Duration::from_secs(1), &t.outbound).await);
    }

    /// A BMC on loopback is refused by default (400-class, naming the setting, nothing
    /// sent), by IP literal and by a name resolving to it; the same BMC answers with
    /// `[outbound] allow_loopback = true`.
    #[tokio::test]
    async fn a_loopback_bmc_is_refused_unless_outbound_allows_it() {
        let (allowed, seen) = fake_redfish().await;
        let strict = Target {
            outbound: OutboundConfig::default(),
            ..allowed.clone()
        };
        match power_state(&strict).await {
            Err(BmcError::Unsupported(m)) => assert!(
                m.contains("refusing to fetch http://127.0.0.1:")
                    && m.contains("set [outbound] allow_loopback = true to allow"),
                "{m}"
            ),
            other => panic!("{other:?}"),
        }
        let named = Target {
            host: "localhost".into(),
            ..strict.clone()
        };
        match power_state(&named).await {
            Err(BmcError::Unreachable(m)) => assert!(m.contains("refusing to connect to localhost"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(
            !service_root(
                "127.0.0.1",
                allowed.port,
                false,
                Duration::from_secs(2),
                &strict.outbound
            )
            .await
        );
        assert!(seen.lock().unwrap().is_empty(), "nothing reached the BMC");
        assert_eq!(power_state(&allowed).await.unwrap(), PowerState::Off);
        assert!(
            service_root(
                "127.0.0.1",
                allowed.port,
                false,
                Duration::from_secs(2),
                &allowed.outbound
            )
            .await
        );
    }

    #[test]
    fn answers_are_parsed() {
        let v = json!({"PowerState": "On", "Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Continuous", "BootSourceOverrideMode": "UEFI"}});
        assert_eq!(parse_power(&v), PowerState::On);
        assert_eq!(parse_power(&json!({"PowerState": "PoweringOn"})), PowerState::Unknown);
        assert_eq!(
            parse_boot(&v),
            BootReport {
                device: Some(BootDevice::Pxe),
                target: "Pxe".into(),
                persistent: Some(true),
                uefi: Some(true),
                enabled: Some(true),
            }
        );
        let none = parse_boot(&json!({"Boot": {"BootSourceOverrideEnabled": "Disabled"}}));
        assert_eq!(
            (none.device, none.enabled, none.target.as_str()),
            (None, Some(false), "None")
        );
        // sushy-emulator's answer to a bogus reset type.
        let body = r#"{"error": {"code": "Base.1.0.GeneralError", "message": "Power state Bogus is not supported", "@Message.ExtendedInfo": [{"MessageId": "Base.1.0.GeneralError"}]}}"#;
        assert_eq!(message(body), "Power state Bogus is not supported");
        let ext =
            r#"{"error": {"message": "x", "@Message.ExtendedInfo": [{"Message": "The property Foo is unknown."}]}}"#;
        assert_eq!(message(ext), "The property Foo is unknown.");
        assert_eq!(message("<html>oops</html>"), "<html>oops</html>");
    }
}
