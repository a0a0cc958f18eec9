"""The PTX tier assembles what NVVM emits, as the GPU's driver does, and a kernel whose optimised
PTX ptxas rejects is compiled again without NVVM's optimisation (harness/backends/assemble.py,
base.unoptimised_if_unassemblable)."""
from __future__ import annotations

import warnings

import pytest

from harness.backends.assemble import AssemblyError, assemble, assembler_available
from harness.backends.base import unoptimised_if_unassemblable

# A branch to a label that is never defined: the shape of NVVM 13's bad PTX (fuzz seed 192).
DANGLING_LABEL_PTX = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry k()
{
	.reg .pred %p<2>;
	setp.eq.s32 %p1, 0, 0;
	@%p1 bra $L__BB0_58;
	ret;
}
"""


def test_rejected_optimised_ptx_is_compiled_again_unoptimised():
    calls = []

    def compile_at(opt):
        calls.append(opt)
        if opt:
            raise AssemblyError("ptxas rejected the PTX of k for sm_90: Unknown symbol '$L__BB0_58'")
        return "ptx at -O0"
    with pytest.warns(UserWarning, match="compiled without NVVM optimisation.*Unknown symbol"):
        assert unoptimised_if_unassemblable(compile_at, "k") == "ptx at -O0"
    assert calls == [True, False]


def test_other_compile_errors_are_raised_as_they_are():
    def compile_at(opt):
        raise TypeError("bad signature")
    with pytest.raises(TypeError):
        unoptimised_if_unassemblable(compile_at, "k")


def test_a_second_rejection_is_raised():
    def compile_at(opt):
        raise AssemblyError("ptxas rejected the PTX of k")
    with pytest.raises(AssemblyError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unoptimised_if_unassemblable(compile_at, "k")


@pytest.mark.skipif(not assembler_available(), reason="nvJitLink (cuda-bindings) is not installed")
def test_the_assembler_rejects_a_branch_to_an_undefined_label():
    with pytest.raises(AssemblyError, match=r"Unknown symbol '\$L__BB0_58'"):
        assemble(DANGLING_LABEL_PTX, (9, 0), "k")


@pytest.mark.skipif(not assembler_available(), reason="nvJitLink (cuda-bindings) is not installed")
def test_the_assembler_accepts_valid_ptx():
    assemble(DANGLING_LABEL_PTX.replace("@%p1 bra $L__BB0_58;", ""), (9, 0), "k")


# A kernel that calls into the device runtime (cooperative groups' grid sync does): ptxas accepts
# it, and only a link without cudadevrt leaves the symbol undefined.
EXTERNAL_CALL_PTX = """
.version 8.0
.target sm_90
.address_size 64

.extern .func cudaCGSynchronize(.param .b64 handle, .param .b32 flags);

.visible .entry k()
{
	.reg .b64 %rd<2>;
	mov.u64 %rd1, 0;
	{
	.param .b64 param0;
	st.param.b64 [param0], %rd1;
	.param .b32 param1;
	st.param.b32 [param1], 0;
	call.uni cudaCGSynchronize, (param0, param1);
	}
	ret;
}
"""


@pytest.mark.skipif(not assembler_available(), reason="nvJitLink (cuda-bindings) is not installed")
def test_a_call_into_the_device_runtime_is_assembled_not_refused():
    assemble(EXTERNAL_CALL_PTX, (9, 0), "k")
