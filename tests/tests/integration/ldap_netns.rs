//! Directory sign-in (`[auth.ldap]`) against a real OpenLDAP `slapd` in a network namespace
//! the test creates: the test makes a CA and a server certificate (openssl CLI), writes its
//! own `slapd.conf` (mdb database, memberof overlay, simple binds only over TLS,
//! `allow bind_anon_dn` so the directory accepts an unauthenticated bind as many do),
//! starts slapd on the namespace's `ldap://localhost:3389`, loads users and groups with
//! `ldapadd`, and starts the real `bootlane` binary beside it.
//!
//! The same server, restarted with each configuration:
//! 1. a service account search (`bind_dn`, `user_filter`) with groups from the entry's
//!    `memberOf`, over StartTLS verified against the test CA: a member of the admins group
//!    gets `admin` (session, an admin-only route answers 200), of the operators group
//!    `operator` (the admin route answers 403), of the viewers group `viewer`; a user in
//!    no mapped group gets 403 and no session; a wrong password, an unknown user and an
//!    empty password get 401 and count as failed logins; the directory's `admin` entry
//!    cannot sign in as the local `admin`, who still signs in locally; after `ldapmodify`
//!    takes the operator out of their group, their next sign-in is refused; a name that
//!    would widen the user filter if it were not escaped is refused;
//! 2. a DN template (direct bind) with a group search (`(member={dn})`): the admin again,
//!    the operator added to the viewers group gets `viewer` at the next sign-in, user
//!    names built to widen the DN or a filter (`,`, `*`) are refused, and after five
//!    failures from the address even the right password answers 429;
//! 3. `ldaps://` instead of StartTLS: the admin again, a wrong password 401;
//! 4. a CA that did not sign the directory's certificate: 503;
//! 5. slapd stopped: a directory user's sign-in answers 503 while the local admin still
//!    signs in.

use std::{path::Path, time::Duration};

use bootlane_tests::{sh, NetNs, Proc, Server, ADMIN_PASSWORD};
use serde_json::{json, Value};

const BASE: &str = "dc=example,dc=org";
const ROOT_DN: &str = "cn=root,dc=example,dc=org";
const ROOT_PW: &str = "root-Pw-9qT2";
const SVC_PW: &str = "svc-Pw-4hZ8";
/// What Bootlane is given: the name in the certificate.
const URL: &str = "ldap://localhost:3389";
/// What the OpenLDAP tools use (libldap canonicalizes `localhost` to the machine's name,
/// which the certificate does not carry; its IP address is in it).
const TOOL_URL: &str = "ldap://127.0.0.1:3389";

fn people(uid: &str) -> String {
    format!("uid={uid},ou=people,{BASE}")
}

fn group(cn: &str) -> String {
    format!("cn={cn},ou=groups,{BASE}")
}

/// The test CA and slapd's certificate for `localhost` and 127.0.0.1.
fn make_certs(dir: &Path) {
    let d = dir.display();
    sh(&format!(
        "cd {d} && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 \
           -subj '/CN=Bootlane LDAP test CA' 2>/dev/null && \
         openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj '/CN=localhost' 2>/dev/null && \
         printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n' > ext.cnf && \
         openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 \
           -extfile ext.cnf 2>/dev/null && \
         openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other-ca.pem -days 2 \
           -subj '/CN=Some other CA' 2>/dev/null && chmod 644 server.key"
    ));
}

/// slapd's configuration: one mdb database under `dc=example,dc=org`, the memberof overlay
/// (groupOfNames `member` → the user's `memberOf`), simple binds only with TLS.
fn slapd_conf(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "include /etc/ldap/schema/core.schema\n\
         include /etc/ldap/schema/cosine.schema\n\
         include /etc/ldap/schema/inetorgperson.schema\n\
         modulepath /usr/lib/ldap\n\
         moduleload back_mdb\n\
         moduleload memberof\n\
         pidfile {d}/slapd.pid\n\
         argsfile {d}/slapd.args\n\
         TLSCACertificateFile {d}/ca.pem\n\
         TLSCertificateFile {d}/server.pem\n\
         TLSCertificateKeyFile {d}/server.key\n\
         # Like many directories, accept an unauthenticated bind (a DN, no password).\n\
         allow bind_anon_dn\n\
         # A simple bind with a password needs TLS (StartTLS here).\n\
         security simple_bind=128\n\
         database mdb\n\
         maxsize 16777216\n\
         suffix \"{BASE}\"\n\
         rootdn \"{ROOT_DN}\"\n\
         rootpw {ROOT_PW}\n\
         directory {d}/db\n\
         overlay memberof\n\
         memberof-group-oc groupOfNames\n\
         memberof-member-ad member\n\
         memberof-memberof-ad memberOf\n\
         memberof-refint true\n\
         access to attrs=userPassword by anonymous auth by self read by * none\n\
         access to * by * read\n"
    )
}

fn ldif() -> String {
    let mut s = format!(
        "dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n\n\
         dn: ou=people,{BASE}\nobjectClass: organizationalUnit\nou: people\n\n\
         dn: ou=groups,{BASE}\nobjectClass: organizationalUnit\nou: groups\n\n\
         dn: cn=bootlane,{BASE}\nobjectClass: inetOrgPerson\ncn: bootlane\nsn: service\nuserPassword: {SVC_PW}\n\n"
    );
    for (uid, pw) in [
        ("alice", "alice-Pw-1"),
        ("oscar", "oscar-Pw-2"),
        ("nora", "nora-Pw-3"),
        ("valerie", "valerie-Pw-4"),
        // A directory entry with a local user's name: the local account wins.
        ("admin", "dir-admin-Pw-5"),
    ] {
        s += &format!(
            "dn: {}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid}\nsn: {uid}\nuserPassword: {pw}\n\n",
            people(uid)
        );
    }
    // nora is only in a group no role is mapped to.
    for (cn, members) in [
        ("admins", vec!["alice", "admin"]),
        ("operators", vec!["oscar"]),
        ("viewers", vec!["valerie"]),
        ("others", vec!["nora", "alice"]),
    ] {
        s += &format!("dn: {}\nobjectClass: groupOfNames\ncn: {cn}\n", group(cn));
        for m in members {
            s += &format!("member: {}\n", people(m));
        }
        // groupOfNames needs a member: the service account stays in each group.
        s += &format!("member: cn=bootlane,{BASE}\n");
        s += "\n";
    }
    s
}

fn ldap_tool(ns: &NetNs, dir: &Path, tool: &str, ldif_text: &str) {
    let f = dir.join(bootlane_tests::unique("ldif"));
    std::fs::write(&f, ldif_text).unwrap();
    ns.sh(&format!(
        "LDAPTLS_CACERT={}/ca.pem {tool} -x -ZZ -H {TOOL_URL} -D {ROOT_DN} -w {ROOT_PW} -f {}",
        dir.display(),
        f.display()
    ));
}

fn login(s: &Server, user: &str, pw: &str) -> (u16, Value) {
    s.api("POST", "/auth/login", Some(&json!({"username": user, "password": pw})))
}

/// Signs in as `user` and checks the role the session reports, and whether the admin-only
/// `GET /users` answers 200 or 403.
fn expect_role(s: &Server, user: &str, pw: &str, role: &str) {
    let (code, v) = login(s, user, pw);
    assert_eq!(code, 200, "{user}: {v}\n{}", s.log_text());
    assert_eq!(v["data"]["role"], role, "{v}");
    let (code, v) = s.api("GET", "/auth/session", None);
    assert_eq!(code, 200);
    assert_eq!(v["data"]["username"], user, "{v}");
    assert_eq!(v["data"]["role"], role, "{v}");
    let (code, v) = s.api("GET", "/users", None);
    let want = if role == "admin" { 200 } else { 403 };
    assert_eq!(code, want, "{user} ({role}) GET /users: {v}");
    s.api("POST", "/auth/logout", None);
}

/// A refused sign-in: its status, and no session left behind.
fn expect_refused(s: &Server, user: &str, pw: &str, status: u16, says: &str) {
    s.api("POST", "/auth/logout", None);
    let (code, v) = login(s, user, pw);
    assert_eq!(code, status, "{user:?}/{pw:?}: {v}");
    let msg = v["error"].as_str().unwrap_or_default();
    assert!(msg.contains(says), "{user:?}: {msg}");
    let (_, v) = s.api("GET", "/auth/session", None);
    assert_eq!(v["data"]["authenticated"], false, "{user:?} has a session: {v}");
}

fn ldap_section(dir: &Path, how: &str) -> String {
    format!(
        "[auth.ldap]\nurl = \"{URL}\"\nca_file = \"{}/ca.pem\"\ntimeout_secs = 3\n{how}\n\
         [auth.ldap.group_roles]\n\
         \"{}\" = \"admin\"\n\"CN=Operators, OU=Groups, DC=example, DC=org\" = \"operator\"\n\"{}\" = \"viewer\"\n",
        dir.display(),
        group("admins"),
        group("viewers")
    )
}

fn restart_with(s: &mut Server, toml: &str) {
    s.terminate(Duration::from_secs(10)).expect("bootlane stops");
    let data_dir = s.data_dir.display().to_string();
    std::fs::write(
        &s.config,
        format!(
            "data_dir = \"{data_dir}\"\nlog = \"info,bootlane=debug\"\n{toml}\n[api]\nlisten = \"127.0.0.1:8080\"\n"
        ),
    )
    .unwrap();
    s.spawn();
}

#[test]
fn ldap_sign_in_maps_directory_groups_to_roles() {
    let ns = NetNs::new("ldap");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("db")).unwrap();
    make_certs(d);
    let conf = d.join("slapd.conf");
    std::fs::write(&conf, slapd_conf(d)).unwrap();
    sh(&format!("slaptest -u -f {} 2>&1", conf.display()));
    // slapd in the foreground (-d 0) as the test's child, in the namespace only.
    let slapd = Proc(
        std::process::Command::new("ip")
            .args(["netns", "exec", &ns.name, "/usr/sbin/slapd", "-d", "0", "-f"])
            .arg(&conf)
            .args(["-h", "ldap://127.0.0.1:3389/ ldaps://127.0.0.1:3636/"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("slapd"),
    );
    let mut up = false;
    for _ in 0..100 {
        if ns
            .sh_out(&format!(
                "ldapsearch -x -H {TOOL_URL} -b '' -s base namingContexts >/dev/null 2>&1"
            ))
            .status
            .success()
        {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(up, "slapd did not answer");
    ldap_tool(&ns, d, "ldapadd", &ldif());
    // The premise of the empty-password check: this directory answers an unauthenticated
    // bind (a DN with an empty password) with success.
    let who = ns.sh(&format!(
        "LDAPTLS_CACERT={}/ca.pem ldapwhoami -x -ZZ -H {TOOL_URL} -D {} -w ''",
        d.display(),
        people("alice")
    ));
    assert!(who.trim() == "anonymous", "unauthenticated bind: {who}");
    // The memberof overlay filled memberOf.
    let mo = ns.sh(&format!(
        "ldapsearch -x -LLL -H {TOOL_URL} -b {} memberOf",
        people("alice")
    ));
    assert!(mo.contains(&group("admins")), "{mo}");

    std::fs::write(d.join("svc-password"), format!("{SVC_PW}\n")).unwrap();
    let search = format!(
        "bind_dn = \"cn=bootlane,{BASE}\"\nbind_password_file = \"{}/svc-password\"\n\
         search_base = \"ou=people,{BASE}\"\nuser_filter = \"(&(objectClass=inetOrgPerson)(uid={{username}}))\"",
        d.display()
    );
    let mut s = Server::start(&ns, &ldap_section(d, &search));

    // 1. Search as the service account, groups from memberOf.
    expect_role(&s, "alice", "alice-Pw-1", "admin");
    expect_role(&s, "oscar", "oscar-Pw-2", "operator");
    expect_role(&s, "valerie", "valerie-Pw-4", "viewer");
    expect_refused(
        &s,
        "nora",
        "nora-Pw-3",
        403,
        "\"nora\" is in no directory group that maps to a Bootlane role",
    );
    let fails = |s: &Server| {
        let (_, v) = s.api("GET", "/events?kind=auth.login_failed&size=100", None);
        v["data"]["events"].as_array().map_or(0, Vec::len)
    };
    expect_refused(&s, "alice", "wrong-Pw", 401, "wrong user name or password");
    expect_refused(&s, "nobody", "alice-Pw-1", 401, "wrong user name or password");
    expect_refused(&s, "alice", "", 401, "wrong user name or password");
    // The local admin: always checked locally, never with the directory's password.
    expect_refused(&s, "admin", "dir-admin-Pw-5", 401, "wrong user name or password");
    let (code, v) = login(&s, "admin", ADMIN_PASSWORD);
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["data"]["role"], "admin");
    assert_eq!(fails(&s), 4, "each refusal is a failed login");
    let (_, v) = s.api("GET", "/events?kind=auth.login&size=100", None);
    let logins = v.to_string();
    assert!(
        logins.contains("alice logged in") && logins.contains("oscar logged in"),
        "{logins}"
    );
    // A name that, unescaped, would make the user filter match alice's entry.
    expect_refused(&s, "alice)(uid=alice", "alice-Pw-1", 401, "wrong user name or password");
    // Roles are read again at each sign-in: oscar leaves the operators group.
    ldap_tool(
        &ns,
        d,
        "ldapmodify",
        &format!(
            "dn: {}\nchangetype: modify\ndelete: member\nmember: {}\n",
            group("operators"),
            people("oscar")
        ),
    );
    expect_refused(&s, "oscar", "oscar-Pw-2", 403, "in no directory group");

    // 2. A DN template (direct bind) and a group search.
    let template = format!(
        "user_dn_template = \"uid={{username}},ou=people,{BASE}\"\ngroup_search_base = \"ou=groups,{BASE}\"\n\
         group_filter = \"(&(objectClass=groupOfNames)(member={{dn}}))\""
    );
    restart_with(&mut s, &ldap_section(d, &template));
    expect_role(&s, "alice", "alice-Pw-1", "admin");
    expect_refused(&s, "oscar", "oscar-Pw-2", 403, "in no directory group");
    ldap_tool(
        &ns,
        d,
        "ldapmodify",
        &format!(
            "dn: {}\nchangetype: modify\nadd: member\nmember: {}\n",
            group("viewers"),
            people("oscar")
        ),
    );
    expect_role(&s, "oscar", "oscar-Pw-2", "viewer");
    expect_refused(&s, "alice", "wrong-Pw", 401, "wrong user name or password");
    expect_refused(&s, "alice", "", 401, "wrong user name or password");
    // Names that would widen the DN or a filter without escaping.
    expect_refused(&s, "alice,ou=people", "alice-Pw-1", 401, "wrong user name or password");
    expect_refused(&s, "*", "alice-Pw-1", 401, "wrong user name or password");
    // Directory refusals count towards the same throttling: the fifth failure from this
    // address is the last one answered; then 429 before the directory is asked.
    expect_refused(&s, "alice", "wrong-Pw", 401, "wrong user name or password");
    expect_refused(&s, "alice", "alice-Pw-1", 429, "too many failed logins");

    // 3. ldaps:// (TLS from the first byte) instead of StartTLS.
    restart_with(
        &mut s,
        &ldap_section(d, &template).replace(URL, "ldaps://localhost:3636"),
    );
    expect_role(&s, "alice", "alice-Pw-1", "admin");
    expect_refused(&s, "alice", "wrong-Pw", 401, "wrong user name or password");

    // 4. The wrong CA: the directory's certificate is not trusted: 503, local admin works.
    let other = ldap_section(d, &template).replace("/ca.pem", "/other-ca.pem");
    restart_with(&mut s, &other);
    expect_refused(&s, "alice", "alice-Pw-1", 503, "directory");
    assert!(s.log_text().contains("directory sign-in failed"), "{}", s.log_text());

    // 5. The directory is down: 503, and the local admin still signs in.
    restart_with(&mut s, &ldap_section(d, &template));
    drop(slapd);
    std::thread::sleep(Duration::from_millis(300));
    expect_refused(
        &s,
        "alice",
        "alice-Pw-1",
        503,
        "the directory ([auth.ldap]) is unavailable",
    );
    let (code, v) = login(&s, "admin", ADMIN_PASSWORD);
    assert_eq!(code, 200, "{v}");
}
