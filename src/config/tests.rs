use super::*;
use crate::model::Scheme;

#[test]
fn the_shipped_example_parses() {
    let text = include_str!("../../config.example.toml");
    let c = Config::parse(text, Path::new("config.example.toml")).expect("example parses");
    assert!(!c.sources.is_empty());
}

#[test]
fn unknown_keys_are_named() {
    let err = Config::parse("[ui]\ntick = 5\n", Path::new("x.toml")).expect_err("typo");
    let msg = err.to_string();
    assert!(msg.contains("unknown field `tick`"), "{msg}");
    assert!(msg.contains("x.toml"), "{msg}");
}

#[test]
fn tls_keys_are_checked_when_the_config_loads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let etcd = |extra: &str| format!("[[source]]\nkind = \"etcd\"\nendpoints = [\"a:1\"]\n{extra}");
    let key = dir.path().join("client-key.pem");
    let text = etcd(&format!("key = \"{}\"\n", key.display()));
    let msg = Config::parse(&text, Path::new("x.toml"))
        .expect_err("key without cert")
        .to_string();
    assert!(
        msg.contains("needs cert") && msg.contains("client-key.pem"),
        "{msg}"
    );

    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "not PEM").expect("write");
    let text = etcd(&format!("cacert = \"{}\"\n", notes.display()));
    let msg = Config::parse(&text, Path::new("x.toml"))
        .expect_err("not PEM")
        .to_string();
    assert!(msg.contains("cacert") && msg.contains("notes.txt"), "{msg}");

    let text = "[[source]]\nkind = \"etcd\"\nendpoints = [\"http://a:1\"]\ninsecure_skip_tls_verify = true\n";
    let msg = Config::parse(text, Path::new("x.toml"))
        .expect_err("plain text with TLS")
        .to_string();
    assert!(msg.contains("http://a:1"), "{msg}");

    let text = etcd("insecure_skip_tls_verify = true\n");
    let c = Config::parse(&text, Path::new("x.toml")).expect("valid");
    let SourceConfig::Etcd(e) = &c.sources[0] else {
        panic!("etcd")
    };
    assert!(e.uses_tls("a:1") && e.uses_tls("https://a:1") && !e.uses_tls("http://a:1"));
}

#[test]
fn a_wrong_scheme_for_etcd_is_explained() {
    let text = "[[source]]\nkind = \"etcd\"\nendpoints = [\"a:1\"]\nscheme = \"sql-lease\"\n";
    let msg = Config::parse(text, Path::new("x.toml"))
        .expect_err("bad")
        .to_string();
    assert!(msg.contains("not an etcd scheme"), "{msg}");
    let text = "[[source]]\nkind = \"etcd\"\nendpoints = []\n";
    let msg = Config::parse(text, Path::new("x.toml"))
        .expect_err("bad")
        .to_string();
    assert!(msg.contains("endpoints"), "{msg}");
}

#[test]
fn preset_patroni_sets_scheme_and_namespace() {
    let text = "[[source]]\nkind = \"etcd\"\nendpoints = [\"a:1\"]\npreset = \"patroni\"\n";
    let c = Config::parse(text, Path::new("x.toml")).expect("valid");
    let SourceConfig::Etcd(e) = &c.sources[0] else {
        panic!("etcd")
    };
    assert_eq!(
        (e.scheme, e.prefix.as_str()),
        (Some(Scheme::Patroni), "/service/")
    );
    let text = format!("{text}scheme = \"etcd-election\"\n");
    let msg = Config::parse(&text, Path::new("x.toml"))
        .expect_err("contradiction")
        .to_string();
    assert!(msg.contains("contradicts"), "{msg}");
}

#[test]
fn a_preset_sets_scheme_table_and_columns_unless_given() {
    let sql = |extra: &str| {
        let text = format!("[[source]]\nkind = \"sql\"\nurl = \"postgres://h/db\"\n{extra}");
        Config::parse(&text, Path::new("x.toml")).map(|mut c| match c.sources.remove(0) {
            SourceConfig::Sql(s) => s,
            SourceConfig::Etcd(_) => panic!("sql"),
        })
    };
    let s = sql("preset = \"orchestrator\"\n").expect("valid");
    assert_eq!(s.scheme, Scheme::SqlHeartbeat);
    assert_eq!(s.table.as_deref(), Some("active_node"));
    assert_eq!(s.columns.leader_id.as_deref(), Some("hostname"));
    assert_eq!(s.timeout, Some(std::time::Duration::from_secs(5)));
    let s = sql("preset = \"shedlock\"\ntable = \"ops.locks\"\n").expect("valid");
    assert_eq!(
        (s.table.as_deref(), s.columns.valid_until.as_deref()),
        (Some("ops.locks"), Some("lock_until"))
    );
    let msg = sql("preset = \"oban\"\nscheme = \"sql-heartbeat\"\n")
        .expect_err("contradiction")
        .to_string();
    assert!(msg.contains("preset oban is a sql-lease table"), "{msg}");
    let msg = sql("").expect_err("no scheme").to_string();
    assert!(
        msg.contains("needs scheme") && msg.contains("shedlock"),
        "{msg}"
    );
    let msg = sql("preset = \"quartz\"\n")
        .expect_err("unknown")
        .to_string();
    assert!(msg.contains("quartz") && msg.contains("shedlock"), "{msg}");
}

#[test]
fn good_endpoints_pass_normalised() {
    for (given, kept) in [
        ("127.0.0.1:2379", "127.0.0.1:2379"),
        (" etcd-1.internal:2379 ", "etcd-1.internal:2379"),
        ("[::1]:2379", "[::1]:2379"),
        ("http://localhost:2379", "http://localhost:2379"),
        ("https://[fe80::1]:2379/", "https://[fe80::1]:2379"),
        ("HTTPS://etcd_a:1", "https://etcd_a:1"),
        ("etcd.example.com.:2379", "etcd.example.com.:2379"),
    ] {
        assert_eq!(check_endpoint(given).as_deref(), Ok(kept), "{given}");
    }
}

#[test]
fn bad_endpoints_say_what_is_wrong() {
    use EndpointError as E;
    let s = |x: &str| x.to_string();
    for (given, want) in [
        ("", E::Empty),
        ("  ", E::Empty),
        (
            "127.0.0.1:99999",
            E::BadPort(s("127.0.0.1:99999"), s("99999")),
        ),
        ("127.0.0.1:0", E::BadPort(s("127.0.0.1:0"), s("0"))),
        ("a:+5", E::BadPort(s("a:+5"), s("+5"))),
        ("a:http", E::BadPort(s("a:http"), s("http"))),
        ("localhost", E::NoPort(s("localhost"), s("localhost"))),
        ("localhost:", E::NoPort(s("localhost:"), s("localhost"))),
        ("http://h", E::NoPort(s("http://h"), s("h"))),
        ("[::1]", E::NoPort(s("[::1]"), s("[::1]"))),
        ("[::1]:", E::NoPort(s("[::1]:"), s("[::1]"))),
        (":2379", E::NoHost(s(":2379"))),
        ("ftp://a:1", E::Scheme(s("ftp://a:1"), s("ftp"))),
        ("::1", E::Ipv6Brackets(s("::1"), s("::1"))),
        (
            "fe80::1:2379",
            E::Ipv6Brackets(s("fe80::1:2379"), s("fe80::1:2379")),
        ),
        ("a:b:1", E::Ipv6Brackets(s("a:b:1"), s("a:b"))),
        ("[zz]:1", E::BadHost(s("[zz]:1"), s("[zz]"))),
        ("[::1]x:1", E::BadHost(s("[::1]x:1"), s("[::1]x:1"))),
        ("999.1.1.1:1", E::BadHost(s("999.1.1.1:1"), s("999.1.1.1"))),
        ("a b:1", E::BadHost(s("a b:1"), s("a b"))),
        ("a..b:1", E::BadHost(s("a..b:1"), s("a..b"))),
        ("a\u{1b}:1", E::BadHost(s("a\\u{1b}:1"), s("a\\u{1b}"))),
        ("http://u@a:1", E::Extra(s("http://u@a:1"))),
        ("http://a:1/v3", E::Extra(s("http://a:1/v3"))),
    ] {
        assert_eq!(check_endpoint(given), Err(want), "{given:?}");
    }
    let msg = check_endpoint("127.0.0.1:99999")
        .expect_err("bad")
        .to_string();
    assert!(
        msg.contains("127.0.0.1:99999") && msg.contains("65535"),
        "{msg}"
    );
}

#[test]
fn config_endpoints_are_checked() {
    let text = "[[source]]\nkind = \"etcd\"\nendpoints = [\"a:1\", \"localhost\"]\n";
    let msg = Config::parse(text, Path::new("x.toml"))
        .expect_err("bad")
        .to_string();
    assert!(
        msg.contains("x.toml") && msg.contains("#1") && msg.contains("`localhost` has no port"),
        "{msg}"
    );
    let text = "[[source]]\nkind = \"etcd\"\nendpoints = [\" a:1 \"]\n";
    let c = Config::parse(text, Path::new("x.toml")).expect("valid");
    let SourceConfig::Etcd(e) = &c.sources[0] else {
        panic!("etcd")
    };
    assert_eq!(e.endpoints, ["a:1"]);
}
