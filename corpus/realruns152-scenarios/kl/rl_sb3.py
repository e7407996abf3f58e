"""Stable-Baselines3 training of a value-based agent on a gymnasium control task."""
import argparse, logging, sys
import gymnasium as gym
from stable_baselines3 import DQN, PPO

p = argparse.ArgumentParser()
p.add_argument('--env', default='CartPole-v1')
p.add_argument('--algo', default='dqn')
p.add_argument('--timesteps', type=int, default=3000)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format='%(asctime)s %(levelname)s %(message)s')
logging.info('env=%s algo=%s timesteps=%d', args.env, args.algo, args.timesteps)
env = gym.make(args.env)
logging.info('observation space %s, action space %s', env.observation_space, env.action_space)
Algo = {'dqn': DQN, 'ppo': PPO}[args.algo]
model = Algo('MlpPolicy', env, verbose=1, seed=0)
model.learn(total_timesteps=args.timesteps)
model.save('agent')
logging.info('saved agent.zip')
