import pytest

from crawler.netguard import AddressPolicy, BlockedAddress


@pytest.mark.parametrize(
    "address",
    [
        "169.254.169.254", "10.0.0.1", "172.16.3.4", "192.168.1.1", "127.0.0.1", "127.8.9.10", "100.64.0.1",
        "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "fe80::1", "fd00:ec2::254", "::ffff:10.0.0.1",
        "ff02::1",
    ],
)  # fmt: skip
def test_non_public_addresses_are_refused_by_default(address):
    assert AddressPolicy().refusal(address)


def test_metadata_address_is_named():
    assert "metadata" in AddressPolicy().refusal("169.254.169.254")


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_pass(address):
    assert AddressPolicy().refusal(address) is None


def test_allowlist_by_cidr_and_by_host():
    policy = AddressPolicy(allowlist=("127.0.0.2/31", "wiki.intranet"))
    assert policy.refusal("127.0.0.2") is None and policy.refusal("127.0.0.3") is None
    assert policy.refusal("127.0.0.4") and policy.refusal("10.0.0.1")
    policy.check_addresses("wiki.intranet", ["10.1.2.3"])  # named host: allowed whatever it resolves to
    with pytest.raises(BlockedAddress):
        policy.check_addresses("other.intranet", ["10.1.2.3"])


def test_allow_private_networks_allows_everything():
    assert AddressPolicy(allow_private_networks=True).refusal("169.254.169.254") is None


def test_check_url_resolves_names_first():
    with pytest.raises(BlockedAddress, match="127.0.0.1|::1"):
        AddressPolicy().check_url("http://localhost:8080/")
    with pytest.raises(BlockedAddress):
        AddressPolicy().check_url("http://10.0.0.1/")  # a literal: refused without any lookup or connection
    with pytest.raises(BlockedAddress, match="did not resolve"):
        AddressPolicy().check_url("http://no-such-host.invalid/")
