// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// What a smart-contract wallet or a batch-payout contract does: sends BNB on through internal calls.
contract Forwarder {
    function forward(address payable to) external payable {
        to.transfer(msg.value);
    }

    function split(address payable a, address payable b) external payable {
        a.transfer(msg.value / 2);
        b.transfer(msg.value - msg.value / 2);
    }

    function split3(address payable a, address payable b, address payable c) external payable {
        a.transfer(msg.value / 3);
        b.transfer(msg.value / 3);
        c.transfer(msg.value - 2 * (msg.value / 3));
    }

    /// Sends inside a sub-call that then reverts, and swallows the revert: the transaction succeeds,
    /// the inner transfer moved nothing.
    function tryForward(address payable to) external payable {
        try this.sendAndFail{value: msg.value}(to) {} catch {}
    }

    function sendAndFail(address payable to) external payable {
        to.transfer(msg.value);
        revert("no");
    }
}
