"""The kernel knobs' one table (env/sysctls.tsv) and what is made from it: env/defaults.env's kernel
sections, the doctor's names and compose/target.yml's sysctls (ltsuite.sysctls, `make sysctls`)."""
import pytest

from ltsuite import sysctls


def test_defaults_env_kernel_sections_are_the_tables():
    text = sysctls.DEFAULTS.read_text(encoding="utf-8")
    assert sysctls.with_sections(text, sysctls.read()) == text, "run `make sysctls`"


def test_a_new_line_of_the_table_is_a_typed_empty_knob_of_its_side(tmp_path):
    table = tmp_path / "sysctls.tsv"
    table.write_text(sysctls.TABLE.read_text(encoding="utf-8")
                     + "TCP_NEW_KNOB  server  net.ipv4.tcp_new_knob  uint?  3  net.ipv4.tcp_new_knob: a knob\n"
                     + "CLIENT_NEW    client  net.ipv4.tcp_client    count? -  net.ipv4.tcp_client: another\n")
    made = sysctls.with_sections(sysctls.DEFAULTS.read_text(encoding="utf-8"), sysctls.read(table))
    server, client = made.split(sysctls.HEADERS["client"])
    assert "# net.ipv4.tcp_new_knob: a knob\n# type: uint?\nTCP_NEW_KNOB=\n" in server
    assert "# net.ipv4.tcp_client: another\n# type: count?\nCLIENT_NEW=\n" in client.split("\n# --- ")[0]
    # Everything outside the kernel sections is as it was; host-wide knobs get no entry.
    assert made.startswith(sysctls.DEFAULTS.read_text(encoding="utf-8")[:sysctls.region(made)[0]])
    assert "NETDEV_MAX_BACKLOG" not in made


def test_a_line_without_its_type_and_description_names_file_line_and_key(tmp_path):
    table = tmp_path / "sysctls.tsv"
    table.write_text("# a comment\nSOMAXCONN server net.core.somaxconn\n")
    with pytest.raises(sysctls.SysctlError, match=r"sysctls.tsv:2: SOMAXCONN: want KEY SIDE SYSCTL TYPE DEFAULT DESCRIPTION"):
        sysctls.read(table)
    table.write_text("SOMAXCONN sever net.core.somaxconn uint? 4096 x\n")
    with pytest.raises(sysctls.SysctlError, match=r":1: SOMAXCONN: side 'sever'"):
        sysctls.read(table)


def test_the_doctors_names_are_the_tables():
    """sysctl_names.py (what the doctor reads, on a host without env/) is made from the table."""
    assert sysctls.NAMES.read_text(encoding="utf-8") == sysctls.names_module(sysctls.read()), "run `make sysctls`"
    from ltsuite import doctor, sysctl_names
    table = sysctls.read()
    assert sysctl_names.SERVER == tuple((k.key, k.sysctl) for k in table if k.side == "server")
    assert set(doctor.SYSCTLS) == {k.sysctl for k in table if k.side != "global"}
    assert doctor.MATRIX_SYSCTLS == sysctl_names.SERVER


def test_a_new_knob_reaches_the_doctors_names(tmp_path):
    table = tmp_path / "sysctls.tsv"
    table.write_text(sysctls.TABLE.read_text(encoding="utf-8")
                     + "TCP_NEW_KNOB  server  net.ipv4.tcp_new_knob  uint?  3  net.ipv4.tcp_new_knob: a knob\n")
    namespace: dict = {}
    exec(sysctls.names_module(sysctls.read(table)), namespace)
    assert namespace["SERVER"][-1] == ("TCP_NEW_KNOB", "net.ipv4.tcp_new_knob")
    assert ("TCP_NEW_KNOB", "net.ipv4.tcp_new_knob") not in namespace["CLIENT"]


def test_compose_targets_sysctls_are_the_tables():
    text = sysctls.COMPOSE.read_text(encoding="utf-8")
    assert sysctls.with_compose(text, sysctls.read()) == text, "run `make sysctls`"


def test_a_server_knob_with_a_default_reaches_compose_and_one_without_or_a_clients_does_not(tmp_path):
    table = tmp_path / "sysctls.tsv"
    table.write_text(sysctls.TABLE.read_text(encoding="utf-8")
                     + "TCP_NEW_KNOB  server  net.ipv4.tcp_new_knob  uint?  3  net.ipv4.tcp_new_knob: a knob\n"
                     + "TCP_MEMORY    server  net.ipv4.tcp_memory    uint?  -  net.ipv4.tcp_memory: the host's\n"
                     + "CLIENT_NEW    client  net.ipv4.tcp_client    count? 1  net.ipv4.tcp_client: another\n")
    text = sysctls.COMPOSE.read_text(encoding="utf-8")
    made = sysctls.with_compose(text, sysctls.read(table))
    block = made[made.index(sysctls.COMPOSE_START):made.index(sysctls.COMPOSE_END)]
    assert block.endswith('      net.ipv4.tcp_new_knob: "${TCP_NEW_KNOB:-3}"\n')
    assert "tcp_memory" not in block and "tcp_client" not in block and "tcp_max_syn_backlog" not in block
    assert '      net.core.somaxconn: "${SOMAXCONN:-4096}"\n' in block
    # Only the block changes.
    assert made.replace(block, "") == text.replace(text[text.index(sysctls.COMPOSE_START):text.index(sysctls.COMPOSE_END)], "")


def test_the_advices_somaxconn_without_a_setting_is_the_tables_default():
    from ltsuite import advicebase
    assert advicebase.SOMAXCONN_DEFAULT == int(sysctls.default_of("SOMAXCONN")) == 4096
    with pytest.raises(KeyError):
        sysctls.default_of("NO_SUCH_KNOB")
