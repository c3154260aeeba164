package codec

// relayHeaderCases are the typed-header cases (headerCases) of headers_relay.go.
func relayHeaderCases() []headerCase {
	return []headerCase{
		{
			name:     "GetConsumerRunningInfoRequestHeader",
			new:      func() CustomHeader { return &GetConsumerRunningInfoRequestHeader{} },
			ext:      map[string]string{"consumerGroup": "G", "clientId": "10.0.0.1@1", "jstackEnable": "true"},
			want:     &GetConsumerRunningInfoRequestHeader{ConsumerGroup: "G", ClientID: "10.0.0.1@1", JstackEnable: true},
			required: []string{"consumerGroup", "clientId"},
			parsed:   []string{"jstackEnable"},
		},
		{
			name: "ConsumeMessageDirectlyResultRequestHeader",
			new:  func() CustomHeader { return &ConsumeMessageDirectlyResultRequestHeader{} },
			ext: map[string]string{"consumerGroup": "G", "clientId": "10.0.0.1@1",
				"msgId": "7F00000100002A9F0000000000000000", "brokerName": "broker-a"},
			want: &ConsumeMessageDirectlyResultRequestHeader{ConsumerGroup: "G", ClientID: "10.0.0.1@1",
				MsgID: "7F00000100002A9F0000000000000000", BrokerName: "broker-a"},
			required: []string{"consumerGroup"},
		},
		{
			name:     "GetConsumerStatusRequestHeader",
			new:      func() CustomHeader { return &GetConsumerStatusRequestHeader{} },
			ext:      map[string]string{"topic": "T", "group": "G", "clientAddr": "10.0.0.1@1"},
			want:     &GetConsumerStatusRequestHeader{Topic: "T", Group: "G", ClientAddr: "10.0.0.1@1"},
			required: []string{"topic", "group"},
		},
		{
			name:     "ResumeCheckHalfMessageRequestHeader",
			new:      func() CustomHeader { return &ResumeCheckHalfMessageRequestHeader{} },
			ext:      map[string]string{"msgId": "7F00000100002A9F0000000000000000"},
			want:     &ResumeCheckHalfMessageRequestHeader{MsgID: "7F00000100002A9F0000000000000000"},
			required: nil,
		},
	}
}
