use super::*;
use crate::model::Scheme;

#[test]
fn the_shipped_example_parses() {
    let text = include_str!("../../config.example.toml");
    let c = Config::parse(text, Path::new("config.example.toml")).expect("example parses");
    assert!(!c.sources.is_empty());
}

#[test]
fn the_serve_section_sets_the_hooks() {
    let text = "[serve]\non_change = \"logger -t electop\"\nwebhooks = [\"http://127.0.0.1:9/h\"]\nhook_timeout = \"3s\"\n";
    let c = Config::parse(text, Path::new("c.toml")).expect("parses");
    assert_eq!(c.serve.on_change.as_deref(), Some("logger -t electop"));
    assert_eq!(c.serve.webhooks, ["http://127.0.0.1:9/h"]);
    assert_eq!(
        c.serve.hook_timeout,
        Some(std::time::Duration::from_secs(3))
    );
    let bad = Config::parse("[serve]\nhook = \"x\"\n", Path::new("c.toml"));
    assert!(bad.is_err_and(|e| e.to_string().contains("hook")));
}

/// The history journal's retention and size bound: a week and 64 MiB unless set; a size
/// or duration it cannot read is named.
#[test]
fn the_history_section_bounds_the_journal() {
    let d = Config::parse("", Path::new("c.toml")).expect("parses");
    let week = std::time::Duration::from_secs(7 * 86_400);
    assert_eq!(
        (d.history.journal_retention, d.history.journal_max_size),
        (week, 64 << 20)
    );
    let text = "[history]\njournal_retention = \"36h\"\njournal_max_size = \"8MiB\"\n";
    let c = Config::parse(text, Path::new("c.toml")).expect("parses");
    let h = std::time::Duration::from_secs(36 * 3600);
    assert_eq!(
        (c.history.journal_retention, c.history.journal_max_size),
        (h, 8 << 20)
    );
    let bad = invalid("[history]\njournal_max_size = \"8 parsecs\"\n");
    assert!(bad.contains("unknown unit `parsecs`"), "{bad}");
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
            _ => panic!("sql"),
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
    // Neither: looked up in the catalog once the database answers, as `--sql URL` alone.
    let s = sql("").expect("no scheme: looked up");
    assert!(s.unresolved() && s.read_only, "{s:?}");
    assert!(s.found().is_some_and(|f| f.contains("looked up")), "{s:?}");
    let msg = sql("locks = { names = [\"a\"] }\n")
        .expect_err("locks without a scheme")
        .to_string();
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

const TWO_SOURCES: &str = "[[source]]\nname = \"prod-etcd\"\nkind = \"etcd\"\nendpoints = [\"a:1\"]\n\n[[source]]\nkind = \"sql\"\nurl = \"sqlite:///x.db\"\nscheme = \"sql-lease\"\n\n[[source]]\nkind = \"etcd\"\nendpoints = [\"b:1\"]\n";

fn invalid(text: &str) -> String {
    Config::parse(text, Path::new("x.toml"))
        .expect_err("invalid")
        .to_string()
}

#[test]
fn sources_are_named_or_numbered_by_kind() {
    let c = Config::parse(TWO_SOURCES, Path::new("x.toml")).expect("valid");
    let names: Vec<_> = c.sources.iter().map(|s| s.name()).collect();
    assert_eq!(names, [Some("prod-etcd"), Some("sql1"), Some("etcd2")]);
    let sel = c.select(None).expect("no contexts: every source");
    assert_eq!((sel.context, sel.sources.len()), (None, 3));
}

#[test]
fn source_names_must_be_usable_and_unique() {
    let dup = format!(
        "{TWO_SOURCES}\n[[source]]\nname = \"sql1\"\nkind = \"etcd\"\nendpoints = [\"c:1\"]\n"
    );
    let msg = invalid(&dup);
    assert!(
        msg.contains("#2 and #4 are both named `sql1`") && msg.contains("x.toml"),
        "{msg}"
    );
    let msg = invalid("[[source]]\nname = \"\"\nkind = \"etcd\"\nendpoints = [\"a:1\"]\n");
    assert!(msg.contains("[[source]] #1 has an empty `name`"), "{msg}");
    let msg = invalid("[[source]]\nname = \"a/b\"\nkind = \"etcd\"\nendpoints = [\"a:1\"]\n");
    assert!(msg.contains("`a/b` may not hold `/`"), "{msg}");
}

#[test]
fn contexts_select_their_sources() {
    let text = format!(
        "current-context = \"dev\"\n{TWO_SOURCES}\n[[context]]\nname = \"prod\"\nsources = [\"prod-etcd\"]\n\n[[context]]\nname = \"dev\"\nsources = [\"etcd2\", \"sql1\"]\n"
    );
    let c = Config::parse(&text, Path::new("x.toml")).expect("valid");
    let sel = c.select(None).expect("current-context");
    assert_eq!(sel.context.as_deref(), Some("dev"));
    let names: Vec<_> = sel.sources.iter().map(|s| s.name()).collect();
    assert_eq!(
        names,
        [Some("etcd2"), Some("sql1")],
        "in the context's order"
    );
    let sel = c.select(Some("prod")).expect("prod");
    assert_eq!(sel.sources.len(), 1);
    let msg = c.select(Some("qa")).expect_err("unknown");
    assert!(
        msg.contains("unknown context `qa`") && msg.contains("prod, dev"),
        "{msg}"
    );
    assert!(
        context::listing(&c).contains("*        dev "),
        "{}",
        context::listing(&c)
    );

    // Without current-context, the first context.
    let first = text.replace("current-context = \"dev\"\n", "");
    let c = Config::parse(&first, Path::new("x.toml")).expect("valid");
    assert_eq!(
        c.select(None).expect("first").context.as_deref(),
        Some("prod")
    );
}

#[test]
fn contexts_are_checked() {
    let ctx = |body: &str| format!("{TWO_SOURCES}\n{body}");
    let msg = invalid(&ctx(
        "[[context]]\nname = \"prod\"\nsources = [\"prod-pg\"]\n",
    ));
    assert!(
        msg.contains("context `prod`: no [[source]] is named `prod-pg`")
            && msg.contains("prod-etcd, sql1, etcd2"),
        "{msg}"
    );
    let msg = invalid(&ctx("[[context]]\nname = \"prod\"\nsources = []\n"));
    assert!(msg.contains("context `prod` has no sources"), "{msg}");
    let twice = "[[context]]\nname = \"a\"\nsources = [\"sql1\"]\n[[context]]\nname = \"a\"\nsources = [\"sql1\"]\n";
    assert!(invalid(&ctx(twice)).contains("defined twice"));
    let msg = invalid(&ctx(
        "[[context]]\nname = \"a\"\nsources = [\"sql1\", \"sql1\"]\n",
    ));
    assert!(msg.contains("lists source `sql1` twice"), "{msg}");
    let msg = invalid(&format!(
        "current-context = \"qa\"\n{}",
        ctx("[[context]]\nname = \"a\"\nsources = [\"sql1\"]\n")
    ));
    assert!(
        msg.contains("current-context = \"qa\" is not a context") && msg.contains("are a"),
        "{msg}"
    );
    let msg = invalid("current-context = \"qa\"\n");
    assert!(msg.contains("no [[context]] is defined"), "{msg}");
    let msg = invalid(&ctx(
        "[[context]]\nname = \"a\"\nsources = [\"sql1\"]\nsource = 1\n",
    ));
    assert!(msg.contains("unknown field `source`"), "{msg}");
    assert!(
        Config::default()
            .select(Some("prod"))
            .expect_err("no contexts")
            .contains("no contexts configured")
    );
}

#[test]
fn sql_settings_are_checked_once_when_the_file_loads() {
    let msg = invalid(
        "[[source]]\nkind = \"sql\"\nurl = \"postgres://u:s3cret@h/db?sslmode=on\"\nscheme = \"sql-lease\"\n",
    );
    assert!(
        msg.contains("[[source]] #1") && msg.contains("sslmode=on"),
        "{msg}"
    );
    assert!(!msg.contains("s3cret"), "{msg}");
    let msg = invalid(
        "[[source]]\nkind = \"sql\"\nurl = \"mysql://h/db\"\nscheme = \"sql-lease\"\ntable = \"a b\"\n",
    );
    assert!(msg.contains("`a b` is not a usable SQL name"), "{msg}");
}
