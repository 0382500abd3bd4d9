"""USERS_PER_VU: the users a burst VU carries, as the suite chooses them (rules.users_per_vu) and
as cell.env records them (design.resolved), and the burst's lead sized for the VUs k6 then runs."""
import pytest

from ltsuite import design, rules

BURST = {"SCENARIO": "burst", "VUS": "30000", "REQUESTS_PER_VU": "1", "K6_INSTANCES": "1", "K6_NOFILE": "",
         "BURST_LEAD_MS": "auto", "USERS_PER_VU": "auto"}
MACHINE = {"cpus": 2, "nofile": 20000}


def cell(**patch):
    return {**BURST, **patch}


@pytest.mark.parametrize("scenario,users,requests,expected", [
    # A burst of one request a user, from BATCH_FROM_USERS users on: USERS_PER_BURST_VU a VU.
    ("burst", 2000, 1, 1000), ("burst", 12000, 1, 1000), ("burst", 30000, 1, 1000),
    # Fewer users, several requests a user (a user's keep-alive connection is its own), or
    # another scenario: a VU per user.
    ("burst", 1999, 1, 1), ("burst", 300, 1, 1), ("burst", 30000, 2, 1), ("spike", 30000, 1, 1),
    ("keepalive", 30000, 1, 1), (None, 30000, 1, 1)])
def test_auto_carries_many_users_a_vu_only_in_a_large_burst_of_one_request_each(scenario, users, requests, expected):
    assert rules.users_per_vu(scenario, users, requests) == expected


def test_auto_resolves_to_the_value_cell_env_records_and_a_number_stays():
    assert design.resolved(cell(K6_INSTANCES="1"), MACHINE) == {"USERS_PER_VU": "1000", "BURST_LEAD_MS": "1000"}
    assert design.resolved(cell(VUS="300"), MACHINE) == {"USERS_PER_VU": "1", "BURST_LEAD_MS": "1000"}
    assert design.resolved(cell(USERS_PER_VU="7", BURST_LEAD_MS="2500"), MACHINE) == {}
    assert design.users_per_vu(cell(USERS_PER_VU="7")) == 7
    assert design.users_per_vu({k: v for k, v in BURST.items() if k != "USERS_PER_VU"}) == 1


def test_k6_runs_one_vu_per_batch_of_users_rounded_up():
    assert design.k6_vus(cell()) == 30
    assert design.k6_vus(cell(VUS="12001", USERS_PER_VU="50")) == 241
    assert design.k6_vus(cell(USERS_PER_VU="1")) == 30000
    assert design.k6_vus(cell(SCENARIO="spike", USERS_PER_VU="50")) == 30000


def test_the_lead_covers_the_vus_k6_runs_not_the_users():
    # 30,000 users in two processes: 30 VUs, created and released in a few ms, twice that plus
    # 0.5 s, at least 1 s; 50 users a VU: 600 VUs, created in 0.35 s and released in 0.03 s on 2
    # cores: 2 s; a VU per user needs 39 s (rules.burst_lead_ms).
    many = cell(VUS="30000", K6_INSTANCES="2")
    assert design.burst_lead(many, MACHINE) == 1000
    assert design.burst_lead({**many, "USERS_PER_VU": "50"}, MACHINE) == 2000
    assert design.burst_lead({**many, "USERS_PER_VU": "1"}, MACHINE) == 39000
    # The processes still follow the users: each holds one socket per user.
    assert design.k6_instances(cell(VUS="30000", K6_INSTANCES="auto"), MACHINE) == 2


def test_vus_max_counts_the_users_the_vus_carried():
    # 30 users a VU: 10 VUs carried 300 users; the last VU of 12,001 users carries one.
    assert design.users_of(cell(VUS="300", USERS_PER_VU="30"), 10) == 300
    assert design.users_of(cell(VUS="12001", USERS_PER_VU="50"), 241) == 12001
    # Fewer VUs than designed (k6 never allocated them all): only theirs.
    assert design.users_of(cell(VUS="12001", USERS_PER_VU="50"), 100) == 5000
    # A VU a user, or a scenario whose VUs carry one user each whatever USERS_PER_VU says.
    assert design.users_of(cell(VUS="300", USERS_PER_VU="1"), 300) == 300
    assert design.users_of(cell(SCENARIO="spike", VUS="300", USERS_PER_VU="30"), 300) == 300
    # Unmeasured stays empty.
    assert design.users_of(cell(VUS="300", USERS_PER_VU="30"), None) is None
