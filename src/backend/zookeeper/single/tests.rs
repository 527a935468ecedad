use super::*;

fn node(path: &str, data: &[u8], czxid: i64, owner: i64) -> Znode {
    Znode {
        path: path.into(),
        data: data.to_vec(),
        czxid,
        mzxid: czxid,
        ephemeral_owner: owner,
    }
}

/// `ActiveNodeInfo{ns1, nn1, nn1.example.com, 8020, 8019}` as protobuf-java writes it.
const NN1: &[u8] = b"\x0a\x03ns1\x12\x03nn1\x1a\x0fnn1.example.com\x20\xd4\x3e\x28\xd3\x3e";

#[test]
fn varints_and_fields_decode_as_protobuf_writes_them() {
    let mut one = &b"\x01"[..];
    assert_eq!(varint(&mut one), Some(1));
    let mut big = &b"\xd4\x3e"[..];
    assert_eq!(varint(&mut big), Some(8020));
    let mut cut = &b"\xd4"[..];
    assert_eq!(varint(&mut cut), None, "a varint cut short");
    let fields = proto_fields(NN1).expect("a message");
    assert_eq!(fields[0], (1, Wire::Bytes(b"ns1")));
    assert_eq!(fields[3], (4, Wire::Varint(8020)));
    assert_eq!(fields[4], (5, Wire::Varint(8019)));
    assert_eq!(proto_fields(b"\x0a\x09ns1"), None, "a length past the end");
    assert_eq!(
        proto_fields(b"\x0b"),
        None,
        "wire type 3 (groups) is not used"
    );
    assert_eq!(
        proto_fields(b"{\"brokerid\":1}"),
        None,
        "JSON is no protobuf"
    );
}

#[test]
fn the_active_namenode_is_its_id_and_address() {
    let a = ActiveNode::decode(NN1).expect("decodes");
    assert_eq!(a.to_string(), "nn1 (nn1.example.com:8020)");
    assert_eq!(a.nameservice, "ns1");
    // YARN's ActiveRMInfoProto: clusterId 1, rmId 2.
    let rm = ActiveNode::decode(b"\x0a\x05yarn1\x12\x03rm2").expect("decodes");
    assert_eq!(rm.to_string(), "rm2");
    assert_eq!(ActiveNode::decode(b"not protobuf at all"), None);
}

#[test]
fn hadoop_lock_and_breadcrumb_make_one_election_per_nameservice() {
    let l = Layout::Hadoop;
    let nodes = [
        node("/hadoop-ha/ns1", b"", 1, 0),
        node("/hadoop-ha/ns1/ActiveStandbyElectorLock", NN1, 5, 0x77),
        node("/hadoop-ha/ns1/ActiveBreadCrumb", NN1, 4, 0),
        node("/hadoop-ha/ns2/ActiveBreadCrumb", NN1, 6, 0),
    ];
    let got = l.elections(3, "/hadoop-ha", &nodes);
    assert_eq!(got.len(), 2, "{got:#?}");
    let ns1 = &got[0];
    assert_eq!((ns1.name.as_str(), ns1.scheme), ("ns1", Scheme::HadoopHa));
    let leader = ns1.leader.as_ref().expect("an active");
    assert_eq!(leader.id, "nn1 (nn1.example.com:8020)");
    assert_eq!(leader.raw_id, NN1, "raw bytes kept for compare");
    assert_eq!(
        leader.stamp.as_deref(),
        Some("0x77"),
        "the holder's session"
    );
    assert_eq!(ns1.waiting(), None, "no line");
    assert!(
        ns1.notes.iter().all(|n| n.text.is_empty()),
        "{:?}",
        ns1.notes
    );
    // The active died: its lock went, its breadcrumb stays.
    let ns2 = &got[1];
    assert!(ns2.leader.is_none());
    assert!(
        ns2.notes[0]
            .text
            .contains("nn1 (nn1.example.com:8020) was active last")
    );
    assert_eq!(
        l.parent_of("/hadoop-ha", "ns2").as_deref(),
        Some("/hadoop-ha/ns2")
    );
}

#[test]
fn kafka_controller_json_of_each_version_gives_the_broker_id() {
    let v2 = br#"{"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1}"#;
    let v1 = br#"{"version":1,"brokerid":7,"timestamp":"1700000000000"}"#;
    assert_eq!(
        Controller::decode(v2),
        Some(Controller {
            broker_id: 1,
            kraft_epoch: Some(-1)
        })
    );
    assert_eq!(Controller::decode(v1).map(|c| c.broker_id), Some(7));
    let l = Layout::Kafka;
    let nodes = [
        node("/brokers", b"", 1, 0),
        node("/controller", v2, 9, 0x1234),
        node("/controller_epoch", b"3", 2, 0),
    ];
    let got = l.elections(0, "/", &nodes);
    assert_eq!(got.len(), 1, "{got:#?}");
    let e = &got[0];
    assert_eq!((e.name.as_str(), e.scheme), ("controller", Scheme::KafkaZk));
    let leader = e.leader.as_ref().expect("a controller");
    assert_eq!(
        (leader.id.as_str(), leader.key.as_str()),
        ("1", "/controller")
    );
    assert_eq!(leader.stamp.as_deref(), Some("0x1234"));
    assert_eq!(e.notes[0].text, "controller epoch 3");
    assert_eq!(e.notes.len(), 1, "no KRaft note at -1: {:?}", e.notes);
    // No controller: the epoch alone keeps the election, leaderless.
    let none = l.elections(0, "/", &nodes[2..]);
    assert!(none[0].leader.is_none());
    assert_eq!(l.watch_path("/"), "/controller");
    assert_eq!(l.watch_path("/kafka"), "/kafka/controller");
    assert!(!l.deep());
}

#[test]
fn a_kraft_controller_in_migration_is_said() {
    let data =
        br#"{"version":2,"brokerid":3000,"timestamp":"1700000000000","kraftControllerEpoch":5}"#;
    let e = kafka(0, &[&node("/controller", data, 1, 9)]).expect("an election");
    assert!(
        e.notes[0].text.contains("KRaft controller 3000"),
        "{:?}",
        e.notes
    );
}

#[test]
fn values_that_decode_as_nothing_known_are_shown_escaped_and_cut() {
    let junk = b"\xff\xfe not json";
    let e = kafka(0, &[&node("/controller", junk, 1, 9)]).expect("an election");
    assert_eq!(
        e.leader.as_ref().map(|l| l.id.as_str()),
        Some("\\xff\\xfe not json")
    );
    let huge = vec![b'x'; 1 << 20];
    let e = hadoop(
        0,
        "ns".into(),
        &[&node("/h/ns/ActiveStandbyElectorLock", &huge, 1, 9)],
    )
    .expect("an election");
    let leader = e.leader.expect("a holder");
    assert!(leader.id.chars().count() <= ID_MAX, "{}", leader.id.len());
    assert!(
        leader.id.ends_with("(1048576 chars)"),
        "{}",
        &leader.id[200..]
    );
    assert_eq!(leader.raw_id.len(), 1 << 20);
}
