//! DMTF Redfish over HTTP(S) with `reqwest` (issue 11 "BMC"): Basic authentication on every
//! request (no session service needed), the system at `/redfish/v1/Systems/<id>` or the
//! first member of the collection, `ComputerSystem.Reset` with the reset type checked
//! against the BMC's `ResetType@Redfish.AllowableValues` when it lists them, and the boot
//! override as a `PATCH` of `Boot.BootSourceOverrideTarget/Enabled/Mode` sent with
//! `If-Match: <ETag>` when the BMC offers one (retried once on 412 with a fresh ETag).
//! Error answers are read for the Redfish `error.message` / `@Message.ExtendedInfo`
//! text. A client is built per call (the TLS switch and timeout are per BMC). No state.

use std::time::Duration;

use reqwest::{header, Method, StatusCode};
use serde_json::{json, Value};

use super::{
    client::{BmcError, BootDevice, BootReport, BootRequest, Reset, Target},
    model::{Identity, PowerState},
};

fn client(t: &Target) -> Result<reqwest::Client, BmcError> {
    reqwest::Client::builder()
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
        BmcError::Unreachable(format!("{}: cannot connect: {e}{tls_hint}", t.label()))
    } else {
        BmcError::Unreachable(format!("{}: request failed: {e}", t.label()))
    }
}

/// Sends one request; returns the status, the ETag and the body. Non-2xx answers are
/// errors: 401/403 [`BmcError::Auth`], others [`BmcError::Refused`] with the message.
async fn call(
    c: &reqwest::Client,
    t: &Target,
    method: Method,
    path: &str,
    body: Option<&Value>,
    if_match: Option<&str>,
) -> Result<(StatusCode, Option<String>, String), BmcError> {
    let mut req = c
        .request(method.clone(), format!("{}{path}", base(t)))
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
    if status.is_success() {
        return Ok((status, etag, text));
    }
    let l = t.label();
    Err(match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => BmcError::Auth(format!(
            "{l}: the BMC refused user {:?} ({status}: {}); check the user and password",
            t.user,
            message(&text)
        )),
        _ => BmcError::Refused(format!("{l}: {method} {path} answered {status}: {}", message(&text))),
    })
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
    match call(&c, t, Method::PATCH, &path, Some(&body), etag.as_deref()).await {
        Err(BmcError::Refused(m)) if m.contains("412") => {
            // The system changed between our GET and PATCH: one retry with a fresh ETag.
            let (_, etag) = get(&c, t, &path).await?;
            call(&c, t, Method::PATCH, &path, Some(&body), etag.as_deref())
                .await
                .map(drop)
        }
        r => r.map(drop),
    }
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
/// needed; certificates are not checked for this look only).
pub async fn service_root(host: &str, port: u16, tls: bool, timeout: Duration) -> bool {
    let Ok(c) = reqwest::Client::builder()
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
    use super::*;

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
