// RequestMemoryPool (queued.max.request.bytes): Kafka's non-strict pool, one
// rule per case.
#include "broker/request_memory_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace daruma::broker {
namespace {

using Ticket = RequestMemoryPool::Ticket;

TEST(RequestMemoryPoolTest, UnboundedGrantsEverythingAndStillCounts) {
  RequestMemoryPool pool(-1);
  Ticket t = 0;
  EXPECT_FALSE(pool.bounded());
  EXPECT_TRUE(pool.Reserve(
      100 << 20, [] {}, &t));
  EXPECT_TRUE(pool.Reserve(
      100 << 20, [] {}, &t));
  EXPECT_EQ(pool.reserved(), 200 << 20);
  pool.Release(200 << 20);
  EXPECT_EQ(pool.reserved(), 0);
}

TEST(RequestMemoryPoolTest, ARequestLargerThanThePoolIsGrantedWhileAnythingIsLeft) {
  RequestMemoryPool pool(1000);
  Ticket t = 0;
  EXPECT_TRUE(pool.Reserve(
      600, [] {}, &t));
  EXPECT_TRUE(pool.Reserve(
      5000, [] {}, &t))
      << "400 left: granted whole, as Kafka's pool";
  EXPECT_EQ(pool.reserved(), 5600);
}

TEST(RequestMemoryPoolTest, AnExhaustedPoolQueuesAndGrantsOnRelease) {
  RequestMemoryPool pool(1000);
  Ticket t = 0;
  ASSERT_TRUE(pool.Reserve(
      1000, [] {}, &t));
  int granted = 0;
  EXPECT_FALSE(pool.Reserve(
      10, [&] { ++granted; }, &t));
  EXPECT_EQ(pool.waiting(), 1u);
  pool.Release(1000);
  EXPECT_EQ(granted, 1);
  EXPECT_EQ(pool.reserved(), 10);
  EXPECT_EQ(pool.waiting(), 0u);
}

TEST(RequestMemoryPoolTest, WaitersAreGrantedOldestFirstWhileRoomLasts) {
  RequestMemoryPool pool(1000);
  Ticket t = 0;
  ASSERT_TRUE(pool.Reserve(
      1000, [] {}, &t));
  std::vector<int> order;
  EXPECT_FALSE(pool.Reserve(
      800, [&] { order.push_back(1); }, &t));
  EXPECT_FALSE(pool.Reserve(
      800, [&] { order.push_back(2); }, &t));
  EXPECT_FALSE(pool.Reserve(
      800, [&] { order.push_back(3); }, &t));
  pool.Release(1000);  // 0 -> 800 (room left) -> 1600: the third waits
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  pool.Release(800);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(RequestMemoryPoolTest, NewRequestsQueueBehindWaitersEvenWithRoom) {
  RequestMemoryPool pool(1000);
  Ticket t = 0;
  ASSERT_TRUE(pool.Reserve(
      1000, [] {}, &t));
  int granted = 0;
  EXPECT_FALSE(pool.Reserve(
      2000, [&] { ++granted; }, &t));
  pool.Release(1000);  // the waiter takes 2000
  EXPECT_EQ(granted, 1);
  pool.Release(1500);  // 500 reserved, room left, nobody waiting
  EXPECT_TRUE(pool.Reserve(
      1, [] {}, &t));
}

TEST(RequestMemoryPoolTest, ACancelledWaiterIsNeverGranted) {
  RequestMemoryPool pool(100);
  Ticket first = 0, second = 0;
  ASSERT_TRUE(pool.Reserve(
      100, [] {}, &first));
  int granted = 0;
  ASSERT_FALSE(pool.Reserve(
      50, [&] { ++granted; }, &first));
  ASSERT_FALSE(pool.Reserve(
      60, [&] { granted += 10; }, &second));
  EXPECT_TRUE(pool.Cancel(first));
  EXPECT_FALSE(pool.Cancel(first)) << "twice";
  pool.Release(100);
  EXPECT_EQ(granted, 10);
  EXPECT_FALSE(pool.Cancel(second)) << "already granted: the bytes are the caller's";
  EXPECT_EQ(pool.reserved(), 60);
}

}  // namespace
}  // namespace daruma::broker
